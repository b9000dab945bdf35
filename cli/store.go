package cli

import (
	"bufio"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/dict"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// StoreCmd groups the object-store commands.
type StoreCmd struct {
	Put     PutCmd         `cmd:"" help:"Store bytes from FILE or stdin and print their id."`
	Cat     CatCmd         `cmd:"" help:"Write an object's exact bytes to stdout."`
	Ls      LsCmd          `cmd:"" help:"List objects, newest first."`
	Stat    StatCmd        `cmd:"" help:"What the store holds and what it takes on disk, by part and kind."`
	Verify  VerifyCmd      `cmd:"" help:"Re-read and re-hash every object; check every index entry against its segment; read every session's log and check that every object it names is there."`
	Reindex ReindexCmd     `cmd:"" help:"Rebuild the index from the segments."`
	Train   StoreTrainCmd  `cmd:"" help:"Train zstd dictionaries per object kind (kept only where they pay)."`
	GC      StoreGCCmd     `cmd:"" name:"gc" help:"Collect objects nothing reaches (mark and sweep; --dry-run plans)."`
	Repack  StoreRepackCmd `cmd:"" help:"Rewrite segments: recompress with current dictionaries, repack small objects."`

	Prune    StorePruneCmd    `cmd:"" help:"Delete sessions past the retention policy in config.toml (--dry-run lists them)."`
	Maintain StoreMaintainCmd `cmd:"" help:"Prune, gc, train missing dictionaries, and hold the store to its budget."`
}

// PutCmd is `rook store put`.
type PutCmd struct {
	Kind string `help:"Object kind: message, tool-result, file, skill, memory, docs, note, other (snapshot and source are rook's own encodings, not taken)." default:"other"`
	File string `arg:"" optional:"" help:"File to store; - or nothing reads stdin." default:"-"`
}

func (c *PutCmd) Run(e *Env) error {
	kind, err := cas.ParseKind(c.Kind)
	if err != nil {
		// cas.ParseKind names every kind, rook's own encodings too: name
		// only those put takes, as --help and the refusal below do.
		return usageErr("--kind: unknown kind %q: use one of %s", c.Kind, strings.Join(puttableKinds(), ", "))
	}
	if kind.Encoded() {
		// The store deduplicates by content and keeps the first kind:
		// bytes put as a source line were read as one wherever they sat,
		// a later message of the same text too (its body "corrupt",
		// verify failing, gc refusing, a native fork taken for an import).
		return usageErr("--kind %s: rook writes %s objects itself, in an encoding of its own (%s), and reads every object of that kind so: use one of %s", kind, kind, encodedWhat(kind), strings.Join(puttableKinds(), ", "))
	}
	if c.File == "" {
		return usageErr("empty FILE: name the file to store, or give - (or nothing) to read stdin")
	}
	// Read at most one byte past the limit: a file of many GiB was read
	// whole into memory only to be refused (or to exhaust it).
	in, name, size := e.Stdin, "standard input", int64(0)
	if c.File != "-" {
		if err := inputGiven("FILE", c.File); err != nil {
			return err
		}
		f, err := os.Open(c.File)
		if err != nil {
			return fmt.Errorf("read input: %w", err)
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			if st.Size() > cas.MaxObjectSize {
				return tooBig(fmt.Sprintf("%s (%s)", c.File, formatBytes(st.Size())))
			}
			size = st.Size()
		}
		in, name = f, c.File
	} else {
		e.stdinHint("the bytes to store", "give a FILE")
		// `< FILE` is a big file too: refused by its size before a byte
		// is read, and read into one buffer of that size (with size 0 the
		// buffer grew by doubling: 3.7 bytes allocated per byte). A pipe
		// keeps size 0 and is refused once it has read past the limit.
		if n := stdinSize(e.Stdin); n >= 0 {
			if n > cas.MaxObjectSize {
				return tooBig(fmt.Sprintf("%s (%s)", name, formatBytes(n)))
			}
			size = n
		}
	}
	buf, err := readObject(in, size)
	if err != nil {
		return fmt.Errorf("read input: %w", err)
	}
	data := buf[cas.ObjectRoom:]
	if len(data) > cas.MaxObjectSize {
		return tooBig(name)
	}
	s, err := e.openStore(true)
	if err != nil {
		return err
	}
	res, err := s.PutInPlace(kind, buf)
	if err == nil {
		err = s.Sync() // the id is printed only once the bytes are durable
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	id := hex.EncodeToString(res.ID[:])
	if e.JSON {
		return e.printJSON(map[string]any{"id": id, "kind": res.Kind.String(), "size": len(data), "existed": res.Existed, "repaired": res.Repaired})
	}
	if res.Repaired {
		fmt.Fprintf(e.Stderr, "rook: note: the stored copy of %s was unreadable; these bytes replaced it\n", cas.Short(res.ID))
	}
	fmt.Fprintln(e.Stdout, id)
	return nil
}

// encodedWhat says what rook encodes as objects of kind k (cas.Kind.Encoded).
func encodedWhat(k cas.Kind) string {
	if k == cas.KindSource {
		return "an imported transcript's lines"
	}
	return "a checkpoint's manifest"
}

// puttableKinds are the kinds `rook store put` takes, by name.
func puttableKinds() []string {
	var names []string
	for _, k := range cas.Kinds {
		if !k.Encoded() {
			names = append(names, k.String())
		}
	}
	return names
}

// readObject reads in to its end, or to one byte past the largest object,
// into a buffer sized once from size, what the file said it holds (0 when
// unknown: a pipe). io.ReadAll grew its buffer as it read: a file was
// allocated about twice over (16 MiB: 2.2 bytes per byte) and copied on
// the way. A file that grew since its Stat is still read to its end.
// The bytes come behind cas.ObjectRoom bytes of room, for PutInPlace: a
// big object is then stored from where it was read, not copied into a
// block first.
func readObject(in io.Reader, size int64) ([]byte, error) {
	return vfs.ReadSizedRoom(in, cas.ObjectRoom, size, cas.MaxObjectSize)
}

func tooBig(what string) error {
	return fmt.Errorf("%s is larger than an object can be (%s): nothing stored; split it, or store a compressed copy", what, formatBytes(cas.MaxObjectSize))
}

// CatCmd is `rook store cat`.
type CatCmd struct {
	Prefix string `arg:"" help:"Object id or a prefix of it (4 to 32 hex characters)."`
}

func (c *CatCmd) Run(e *Env) error {
	if _, err := cas.ParsePrefix(c.Prefix); err != nil {
		return usageErr("%v", err)
	}
	s, err := e.openStore(false)
	if err != nil {
		return err
	}
	defer s.Close()
	id, err := s.Resolve(c.Prefix)
	if nf := (*cas.NotFoundError)(nil); errors.As(err, &nf) {
		return fmt.Errorf("%w: `rook store ls` lists the objects", err)
	}
	if err != nil {
		return err
	}
	data, err := s.Get(id)
	if err != nil {
		var ce *cas.CorruptError
		var nd *cas.NeedsDictError
		if errors.As(err, &ce) && !errors.As(err, &nd) && !readFailed(ce) {
			return fmt.Errorf("%v: nothing written; `rook store verify` lists every damaged object, and putting the original bytes again repairs it", err)
		}
		return err
	}
	if e.JSON {
		return printObjectJSON(e.Stdout, hex.EncodeToString(id[:]), data)
	}
	_, err = e.Stdout.Write(data)
	return err
}

// readFailed: the OS failed the read (permission denied, an I/O error),
// which the error says; the object is not known to be damaged.
func readFailed(ce *cas.CorruptError) bool {
	_, failed := ce.ReadFailed()
	return failed
}

// printObjectJSON writes `store cat --json`, {"data", "id", "size"}, as
// printJSON writes it (keys in that order, indented), with the base64 of
// the bytes streamed out in chunks. printJSON built the base64 as a
// string, then marshalled and indented it into two buffers more: about
// 12.7 bytes allocated for each byte of the object, and the largest one
// rook stores (1 GiB) did not fit in most machines' memory.
func printObjectJSON(w io.Writer, id string, data []byte) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString("{\n  \"data\": ")
	if data == nil {
		bw.WriteString("null") // as printJSON wrote a nil []byte
	} else {
		bw.WriteByte('"')
		enc := base64.NewEncoder(base64.StdEncoding, bw)
		enc.Write(data) // a failed write is bw's, returned by Flush
		enc.Close()
		bw.WriteByte('"')
	}
	fmt.Fprintf(bw, ",\n  \"id\": %q,\n  \"size\": %d\n}\n", id, len(data))
	return bw.Flush()
}

// LsCmd is `rook store ls`.
type LsCmd struct {
	Kind  string `help:"Only objects of this kind."`
	Limit int    `help:"At most N objects (0: all)." default:"50"`
}

type objectRow struct {
	ID      string `json:"id"`
	Short   string `json:"short"`
	Kind    string `json:"kind"`
	Size    int64  `json:"logical_bytes"`
	Stored  int64  `json:"stored_bytes"`
	Where   string `json:"where"`
	Segment string `json:"segment,omitempty"`
	Created string `json:"created"`
}

func (c *LsCmd) Run(e *Env) error {
	var kind cas.Kind
	if c.Kind != "" {
		k, err := cas.ParseKind(c.Kind)
		if err != nil {
			return usageErr("--kind: %v", err)
		}
		kind = k
	}
	if c.Limit < 0 {
		return usageErr("--limit must be 0 or more")
	}
	s, err := e.openStore(false)
	if err != nil {
		return err
	}
	defer s.Close()
	objs, more, err := s.ListCounted(kind, c.Limit)
	if err != nil {
		return err
	}
	rows := make([]objectRow, 0, len(objs))
	for _, o := range objs {
		r := objectRow{ID: hex.EncodeToString(o.ID[:]), Short: cas.Short(o.ID), Kind: o.Kind.String(), Size: o.Size, Stored: o.Stored,
			Where: "segment", Segment: fmt.Sprintf("%08d", o.Segment), Created: time.Unix(o.Created, 0).UTC().Format(time.RFC3339)}
		if o.Inline {
			r.Where = "inline"
		}
		rows = append(rows, r)
	}
	if e.JSON {
		// A bare array, as ever (scripts read .[]): a script that wants
		// every object gives --limit 0; the note is the text's.
		return e.printJSON(rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(e.Stdout, "no objects")
		return nil
	}
	t := &table{right: map[int]bool{2: true, 3: true}}
	t.add("id", "kind", "logical", "stored", "where", "created")
	for i, r := range rows {
		where := r.Where
		if where == "segment" {
			where = "segment " + r.Segment
		}
		t.add(r.Short, r.Kind, formatBytes(r.Size), formatBytes(r.Stored), where, shownTime(time.Unix(objs[i].Created, 0)))
	}
	err = t.write(e.Stdout)
	if more > 0 {
		// Cut silently, the default 50 rows read as the store's objects.
		fmt.Fprintf(e.Stderr, "rook: note: %d more object(s) not listed, past the newest %d: `--limit 0` lists them all\n", more, c.Limit)
	}
	return err
}

// dictJSON is a dictionary as `store stat --json` gives it: dict.Info
// with its kind by name, as every other kind in rook's output is. A
// damaged one's kind and creation are not known: left out.
type dictJSON struct {
	ID      uint32     `json:"id"`
	Kind    string     `json:"kind,omitempty"`
	Created *time.Time `json:"created,omitempty"`
	Bytes   int        `json:"bytes"`
	File    string     `json:"file"`
	Damaged string     `json:"damaged,omitempty"`
	// Dropped: marked dropped, its file not yet deleted (a drop cut
	// short): no kind's newest; the drop again deletes it.
	Dropped bool `json:"dropped,omitempty"`
}

// StatCmd is `rook store stat`.
type StatCmd struct{}

func ratio(a, b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fx", float64(a)/float64(b))
}

func (c *StatCmd) Run(e *Env) error {
	s, err := e.openStore(false)
	if err != nil {
		return err
	}
	defer s.Close()
	st, err := s.Stats()
	if err != nil {
		return err
	}
	if e.JSON {
		if st.Kinds == nil {
			st.Kinds = []cas.KindStats{}
		}
		dicts := []dictJSON{}
		cut := s.DropsCutShort()
		for _, d := range s.Dictionaries() {
			dj := dictJSON{ID: d.ID, Bytes: d.Bytes, File: d.File, Damaged: d.Damaged, Dropped: slices.Contains(cut, d.ID)}
			if d.Damaged == "" { // a damaged one's kind and creation are not known
				created := d.Created
				dj.Kind, dj.Created = cas.Kind(d.Kind).String(), &created
			}
			dicts = append(dicts, dj)
		}
		missing := s.MissingDictionaries()
		if missing == nil {
			missing = []uint32{}
		}
		return e.printJSON(map[string]any{"home": e.Home, "stats": st, "dictionaries": dicts, "dictionaries_missing": missing})
	}
	w := e.Stdout
	fmt.Fprintf(w, "objects         %12d  (%d inline, %d in segments)\n", st.Objects, st.Inline, st.InSegments)
	fmt.Fprintf(w, "logical size    %12s\n", formatBytes(st.Size))
	fmt.Fprintf(w, "stored size     %12s  (%s compression)\n", formatBytes(st.Stored), ratio(st.Size, st.Stored))
	// Not "saved by dedup": the puts counted may be of objects gc has
	// collected since, which saves nothing now.
	fmt.Fprintf(w, "repeated puts   %12s  (%d put(s) of bytes already stored, not written again; gc does not lower the count)\n", formatBytes(st.RepeatedBytes), st.RepeatedPuts)
	d := st.Disk
	fmt.Fprintf(w, "on disk         %12s  (index %s, segments %s in %d file(s), dictionaries %s, event log %s, other %s)\n",
		formatBytes(d.Total), formatBytes(d.Index), formatBytes(d.Segments), st.Segments, formatBytes(d.Dicts), formatBytes(d.Events), formatBytes(d.Other))
	dicts, missing, cut := s.Dictionaries(), s.MissingDictionaries(), s.DropsCutShort()
	if len(dicts) == 0 && len(missing) > 0 {
		// Not "none yet": the ones given out are listed as missing below.
	} else if len(dicts) == 0 {
		fmt.Fprintln(w, "dictionaries    none yet: `rook store train` makes them once kinds have enough objects")
	} else {
		newest := map[uint8]dict.Info{}
		damaged := 0
		for _, d := range dicts {
			if d.Damaged != "" {
				damaged++
				// Said as doctor says it: what it stops, and what to do.
				fmt.Fprintf(w, "dictionaries    #%d is DAMAGED: %s: it does not read, and the objects compressed with it cannot be read until it is whole: put %s back from a backup (`rook store verify` says whether any object needs it)\n", d.ID, d.Damaged, d.File)
				continue
			}
			if slices.Contains(cut, d.ID) {
				// Marked dropped: nothing compresses with it (no kind's
				// newest); its file is there because the drop was cut short.
				fmt.Fprintf(w, "dictionaries    #%d is DROPPED, its file %s not yet deleted (a drop cut short): `rook store repack --drop-dictionary %d` deletes it\n", d.ID, d.File, d.ID)
				continue
			}
			newest[d.Kind] = d
		}
		var parts []string
		for _, k := range cas.Kinds {
			if d, ok := newest[uint8(k)]; ok {
				parts = append(parts, fmt.Sprintf("%s #%d (%s)", k, d.ID, formatBytes(int64(d.Bytes))))
			}
		}
		if len(parts) == 0 {
			if damaged == len(dicts) {
				fmt.Fprintf(w, "dictionaries    %d in all; none of them reads\n", len(dicts))
			} else {
				fmt.Fprintf(w, "dictionaries    %d in all; newest: none\n", len(dicts))
			}
		} else {
			fmt.Fprintf(w, "dictionaries    %d in all; newest: %s\n", len(dicts), strings.Join(parts, ", "))
		}
	}
	// A lost file is in no list of the files present: named here, as
	// reindex's and repack's errors say to put it back.
	for _, id := range missing {
		fmt.Fprintf(w, "dictionaries    #%d is MISSING: no file %s (lost, or a train a crash cut short); `rook store verify` says whether records need it\n", id, filepath.Join(e.Home, cas.DictDir, dict.FileName(id)))
	}
	if len(st.Kinds) == 0 && st.SegmentsHoldRecords() {
		// Not empty: an index rebuilt while a dictionary could not be
		// loaded names none of the objects of its records.
		fmt.Fprintf(w, "\nthe index names no object, but the %d segment(s) hold %s of records it does not name (records of a dictionary that cannot be loaded, the index rebuilt meanwhile?): `rook store verify` says what they hold and what to do\n", st.Segments, formatBytes(st.Disk.Segments))
		return nil
	}
	if len(st.Kinds) == 0 {
		fmt.Fprintln(w, "\nthe store is empty: `rook store put FILE` adds an object")
		return nil
	}
	fmt.Fprintln(w)

	t := &table{right: map[int]bool{1: true, 2: true, 3: true, 4: true}}
	t.add("kind", "objects", "logical", "stored", "ratio", "stored share")
	for _, k := range st.Kinds {
		t.add(k.Kind, fmt.Sprint(k.Objects), formatBytes(k.Size), formatBytes(k.Stored), ratio(k.Size, k.Stored), bar(k.Stored, st.Stored, 20))
	}
	return t.write(w)
}

// bar draws n's share of total in width cells.
func bar(n, max int64, width int) string {
	filled := 0
	if max > 0 {
		filled = int((n*int64(width) + max - 1) / max)
	}
	return strings.Repeat("█", filled) + strings.Repeat("·", width-filled)
}

// VerifyCmd is `rook store verify`.
type VerifyCmd struct{}

// verifyReport is verify's --json: the objects' report, and the sessions'
// and refs' (what they name, and whether their logs read).
type verifyReport struct {
	cas.VerifyReport
	References agent.ReferenceReport `json:"references"`
	// NamedBy: for each object of a problem (its short id), where it is
	// first named (agent.ReferenceReport.NamedBy), when it is.
	NamedBy map[string]string `json:"named_by,omitempty"`
}

func (c *VerifyCmd) Run(e *Env) error {
	r, err := e.openRook(false)
	if err != nil {
		return err
	}
	defer r.Close()
	p := newProgress(e.Stderr, "verify")
	rep, err := r.Store.Verify(p.update)
	p.done()
	if err != nil {
		return err
	}
	if rep.Problems == nil {
		rep.Problems = []cas.Problem{}
	}
	p = newProgress(e.Stderr, "verify: sessions")
	p.unit = "sessions"
	refs, rerr := r.VerifyReferences(p.update)
	p.done()
	// Records of a lost dictionary the index names nothing in are dead
	// space only when nothing the sessions and refs name is missing: else
	// they may hold those objects (an index rebuilt without the
	// dictionary cannot name them), and wait for it.
	unnamed := 0
	if rerr != nil || refs.Missing() > 0 {
		unnamed = rep.NamedObjectsMissing()
	}
	// Where each damaged object is named (a session's event, a ref), by
	// its short id: the session to fork and remove when the object cannot
	// be put back.
	var namedBy map[string]string
	for _, pr := range rep.Problems {
		if pr.ID == nil {
			continue
		}
		if by := refs.NamedBy(*pr.ID); by != "" {
			if namedBy == nil {
				namedBy = map[string]string{}
			}
			namedBy[pr.Short] = by
		}
	}
	if e.JSON {
		if rerr != nil {
			return rerr
		}
		// A failed write is Main's to tell, after the verdict below.
		if err := unprinted(e.printJSON(verifyReport{VerifyReport: rep, References: refs, NamedBy: namedBy})); err != nil {
			return err
		}
	} else {
		// The objects' report first, even when the sessions' could not be
		// made (the store's sessions not listed): it is made already.
		for _, pr := range rep.Problems {
			fmt.Fprintln(e.Stdout, pr.String())
		}
		if len(rep.Problems) == 0 {
			fmt.Fprintf(e.Stdout, "all %d objects verified (%d records in %d segment(s), %s read)\n", rep.Objects, rep.Records, rep.Segments, formatBytes(rep.Bytes))
		}
		if rerr != nil {
			return fmt.Errorf("the sessions and refs could not be checked: %w", rerr)
		}
		for _, pr := range rep.Problems {
			if by := namedBy[pr.Short]; pr.ID != nil && by != "" {
				fmt.Fprintf(e.Stdout, "%s: named by %s\n", pr.Short, terminalLine(by))
			}
		}
		for _, pr := range refs.Problems {
			fmt.Fprintln(e.Stdout, terminalLine(pr.String()))
		}
		if len(refs.Problems) == 0 {
			fmt.Fprintf(e.Stdout, "%d session(s) read to their end (%d events), %d ref(s): all %d objects they name are in the store\n", refs.Sessions, refs.Events, refs.Refs, refs.Named)
		}
	}
	// A writer beside this verify (an import) may be creating them: it
	// writes a session's .meta after its log (agent.NoMetaWhileWriting).
	creating := ""
	if len(refs.LogsWithoutMeta) > 0 {
		creating, _ = cas.LockHolder(e.FS, e.Home)
	}
	if !e.JSON {
		// Named, not failed: a session rm that stopped part way leaves
		// one as a .meta lost does (agent.NoMetaReason).
		reason := agent.NoMetaReason
		if creating != "" {
			reason = agent.NoMetaWhileWriting(creating)
		}
		for _, p := range refs.LogsWithoutMeta {
			fmt.Fprintf(e.Stdout, "%s: %s\n", terminalLine(p), reason)
		}
	}
	if n := len(refs.LogsWithoutMeta); n > 0 {
		where := "named above"
		if e.JSON {
			where = "references.logs_without_meta"
		}
		if creating != "" {
			fmt.Fprintf(e.Stderr, "rook: note: %d event log(s) have no .meta beside them yet (%s): the writer %s may be creating them: run `rook store verify` again once it ends\n", n, where, creating)
		} else {
			fmt.Fprintf(e.Stderr, "rook: note: %d event log(s) have no .meta beside them (%s): gc keeps the objects their events name until each log is put back as a session (its .meta) or removed (`rook session rm ID`)\n", n, where)
		}
	}
	if rep.TornTail != "" && !e.JSON {
		fmt.Fprintf(e.Stderr, "rook: note: %s: not acknowledged yet: a writer beside this verify is writing it, or a crash cut it mid-write (the next writer then cuts it off: %s%s)\n", rep.TornTail, cas.TornTailRoom(rep.TornTailBytes), tornTailNoRoom(e.Home, rep.TornTailBytes))
	}
	if len(rep.Problems) == 0 && len(refs.Problems) == 0 {
		return nil
	}
	msg := fmt.Sprintf("%d problem(s) found", len(rep.Problems)+len(refs.Problems))
	// Objects waiting for a dictionary file are not damaged: the fix is
	// the file, said per dictionary, not their bytes.
	// Nor are those of a record decoded with the wrong dictionary: their
	// bytes put again would be compressed with that wrong dictionary.
	if n := rep.Unreadable - rep.WaitingObjects - rep.WrongDictObjects; n > 0 {
		msg += fmt.Sprintf("; %d object(s) cannot be read back: putting an object's original bytes again repairs it", n)
		// An import's objects are its transcripts' bytes: reading
		// those again puts them back, which no user could by hand.
		var ids []cas.Key
		for _, pr := range rep.Problems {
			if pr.ID != nil {
				ids = append(ids, *pr.ID)
			}
		}
		for _, f := range r.ImportFormats(refs, ids) {
			msg += fmt.Sprintf("; those of imported %s sessions: `rook import %s --reread PATH...` reads their transcripts again and puts them back", agent.FormatName(f), f)
		}
		if len(namedBy) > 0 {
			where := "the \"named by\" lines"
			if e.JSON {
				where = "named_by"
			}
			msg += fmt.Sprintf("; %s say which sessions hold them (a damaged snapshot or imported line stops gc until it is put back or its session is removed: `rook session fork ID --at N` keeps the events before #N, then `rook session rm ID`)", where)
		}
	}
	if rep.DamagedRegions > 0 && rep.Unreadable == 0 {
		// Every object reads back: what is damaged holds none, and a
		// repack, which copies the objects out, moves those segments
		// aside (cas Repack: to torn/, once no entry points into them).
		msg += fmt.Sprintf("; %d damaged segment region(s), holding no object any more: %s", rep.DamagedRegions, repackMovesDamaged(e.Home))
	} else if rep.DamagedRegions > 0 {
		msg += fmt.Sprintf("; %d damaged segment region(s)", rep.DamagedRegions)
	}
	for _, d := range rep.Dictionaries {
		msg += fmt.Sprintf("; %s: %d object(s) in %d intact record(s) need it: put %s back from a backup", d.Problem, d.Objects, d.Records, d.File)
	}
	if unnamed > 0 {
		msg += fmt.Sprintf("; %d of those record(s) hold no object the index names, but sessions or refs name objects the store lacks, which may be theirs (an index rebuilt while the dictionary could not be loaded cannot name them): once the dictionary is back, `rook store reindex` reads them again", unnamed)
	}
	if rep.DeadRecords > 0 {
		// No backup needed: no object the index names is in them, and
		// none the sessions and refs name is missing.
		msg += fmt.Sprintf("; %d intact record(s) need a dictionary that cannot be loaded but hold no object the index names: dead space, not to repair: %s", rep.DeadRecords, repackMovesDamaged(e.Home))
	}
	for _, d := range rep.WrongDictionaries {
		msg += fmt.Sprintf("; %s: %d object(s) in %d record(s) decode with it to other bytes: put this store's own dictionary file back from a backup as %s (do not put those objects again: their new copies would be compressed with the wrong dictionary)", d.Problem, d.Objects, d.Records, d.File)
	}
	for _, m := range rep.MissingSegments {
		msg += fmt.Sprintf("; segment %s is missing (%d object(s)): put %s back from a backup, or, if it is gone for good, `rook store reindex` to forget its objects", m.Segment, m.Objects, m.File)
	}
	// A read of the index that failed is no damage to rebuild: what
	// failed, and to run verify again once the disk or the permissions
	// are fixed (what the rest found stands for the part read).
	readFailed := 0
	for _, pr := range rep.Problems {
		if pr.Status == cas.ProblemIndexReadFailed {
			readFailed++
			msg += "; " + pr.Reason
		}
	}
	// Problems of the store's files whose fix is the file, not the index.
	fileProblems := len(rep.MissingSegments)
	for _, d := range rep.WrongDictionaries {
		fileProblems += d.Records
	}
	if rep.DictionaryIDsError != "" {
		fileProblems++
		msg += "; " + rep.DictionaryIDsError
	}
	if rep.Unreadable < len(rep.Problems)-rep.DamagedRegions-rep.WaitingRecords-rep.DeadRecords-readFailed-fileProblems {
		msg += "; `rook store reindex` rebuilds the index from what the segments hold"
	}
	if missing := refs.Missing(); missing > 0 {
		msg += fmt.Sprintf("; %d object(s) named by sessions or refs are not in the store: `rook store reindex` finds any the segments still hold, and putting an object's original bytes again restores it", missing)
		// An import's objects are its transcripts' bytes: --reread puts
		// back those its sessions name, missing as unreadable.
		for _, f := range missingFormats(r, refs) {
			msg += fmt.Sprintf("; those of imported %s sessions: `rook import %s --reread PATH...` reads their transcripts again and puts them back", agent.FormatName(f), f)
		}
	}
	if n := len(refs.Problems) - refs.Missing(); n > 0 {
		// Under --json there are no lines above: the report's problems
		// say it.
		where := "each line above says what to do"
		if e.JSON {
			where = "each of references.problems in the report says what to do"
		}
		msg += fmt.Sprintf("; %d session(s) or line(s) do not read (%s)", n, where)
	}
	return &exitError{code: ExitFailure, msg: msg}
}

// ReindexCmd is `rook store reindex`.
type ReindexCmd struct{}

func (c *ReindexCmd) Run(e *Env) error {
	s, err := e.openStoreWith(cas.Options{Writable: true, ForReindex: true})
	if err != nil {
		return err
	}
	p := newProgress(e.Stderr, "reindex")
	rep, err := s.Reindex(p.update)
	p.done()
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	damage := make([]string, 0, len(rep.Damage))
	for _, d := range rep.Damage {
		damage = append(damage, d.String())
	}
	if e.JSON {
		if rep.Cut == nil {
			rep.Cut = []string{}
		}
		waiting := []string{}
		for _, d := range rep.NeedsDict {
			waiting = append(waiting, d.String())
		}
		wrongDict := []string{}
		for _, w := range rep.WrongDict {
			wrongDict = append(wrongDict, w.String())
		}
		// A failed write is Main's to tell, after the verdict below.
		if err := unprinted(e.printJSON(map[string]any{"segments": rep.Segments, "records": rep.Records, "objects": rep.Objects, "damage": damage, "cut": rep.Cut, "needs_dictionary": waiting, "carried": rep.Carried, "carry_error": rep.CarryErr, "wrong_dictionary": wrongDict, "wrong_dictionary_kept": rep.WrongDictKept, "rewritten_from_index": rep.Rewritten})); err != nil {
			return err
		}
	} else {
		for _, c := range rep.Cut {
			fmt.Fprintf(e.Stdout, "cut torn tail: %s\n", c)
		}
		for _, d := range damage {
			fmt.Fprintf(e.Stdout, "damaged: %s\n", d)
		}
		for _, d := range rep.NeedsDict {
			fmt.Fprintf(e.Stdout, "waiting: segment %s offset %d: %s\n", fmt.Sprintf("%08d.seg", d.Segment), d.Offset, d.Reason)
		}
		if rep.CarryErr != "" {
			fmt.Fprintf(e.Stdout, "not carried: %s\n", rep.CarryErr)
		}
		for _, w := range rep.WrongDict {
			fmt.Fprintf(e.Stdout, "wrong dictionary: %s\n", w)
		}
		if rep.Rewritten > 0 {
			fmt.Fprintf(e.Stdout, "rewritten: %d object(s) whose record is gone (a segment missing, a record damaged), from the copy the old index kept of their bytes, re-hashed, into new records\n", rep.Rewritten)
		}
		fmt.Fprintf(e.Stdout, "reindexed %d objects from %d records in %d segment(s)\n", rep.Objects, rep.Records, rep.Segments)
	}
	// A record that decodes to other objects than the old index named
	// in it is said first, whatever else failed: its objects keep their
	// entries only while the index names them, and the fix is a file.
	var wrongDictMsg string
	if len(rep.WrongDict) > 0 {
		var files []string
		seen := map[uint32]bool{}
		for _, w := range rep.WrongDict {
			if !seen[w.Dict] {
				seen[w.Dict] = true
				files = append(files, fmt.Sprintf("dictionary %d (%s)", w.Dict, filepath.Join(e.Home, cas.DictDir, dict.FileName(w.Dict))))
			}
		}
		wrongDictMsg = fmt.Sprintf("%d record(s) decode with %s to objects other than the ones the index named at them: that file is likely not the one they were written with (a dictionary of another store: every store numbers its dictionaries from 1); the old index's %d entries of their objects were kept: put this store's own dictionary file back from a backup and run `rook store reindex` again; until then, do not put those objects again (their new copies would be compressed with the wrong dictionary)", len(rep.WrongDict), strings.Join(files, ", "), rep.WrongDictKept)
	}
	if len(rep.NeedsDict) > 0 {
		// Named here: `rook store stat` lists the dictionaries present,
		// not one whose file is gone.
		var files []string
		seen := map[uint32]bool{}
		for _, d := range rep.NeedsDict {
			if !seen[d.Dict] {
				seen[d.Dict] = true
				files = append(files, filepath.Join(e.Home, cas.DictDir, dict.FileName(d.Dict)))
			}
		}
		msg := fmt.Sprintf("%d record(s) need a dictionary that cannot be loaded; %d of their objects were kept from the old index", len(rep.NeedsDict), rep.Carried)
		if rep.CarryErr != "" {
			// Said, not hidden: the objects past the damage have no entry
			// until the dictionary is back and a reindex re-hashes them.
			msg += fmt.Sprintf(", not all (%s)", rep.CarryErr)
		}
		msg = fmt.Sprintf("%s: put %s back from a backup and run `rook store reindex` again", msg, strings.Join(files, ", "))
		if wrongDictMsg != "" {
			msg = wrongDictMsg + "; " + msg
		}
		return &exitError{code: ExitFailure, msg: msg}
	}
	if len(rep.Damage) > 0 {
		msg := fmt.Sprintf("%d damaged region(s) skipped; an object whose only copy was there is not in the index any more (`rook store verify` lists what is left), and putting its original bytes again restores it", len(rep.Damage))
		if wrongDictMsg != "" {
			msg = wrongDictMsg + "; " + msg
		}
		return &exitError{code: ExitFailure, msg: msg}
	}
	if wrongDictMsg != "" {
		return &exitError{code: ExitFailure, msg: wrongDictMsg}
	}
	return nil
}

// missingFormats lists the formats of the imported sessions that name
// objects not in the store (refs' problems), sorted.
func missingFormats(r *agent.Rook, refs agent.ReferenceReport) []string {
	var formats []string
	seen := map[string]bool{}
	for _, pr := range refs.Problems {
		if pr.ID == "" || pr.Session == "" || seen[pr.Session] {
			continue
		}
		seen[pr.Session] = true
		id, err := eventlog.ParseID(pr.Session)
		if err != nil {
			continue
		}
		m, err := r.Log.ReadMeta(id)
		if err != nil {
			continue
		}
		if src := r.ImportedFrom(m); src != nil && !slices.Contains(formats, src.Format) {
			formats = append(formats, src.Format)
		}
	}
	slices.Sort(formats)
	return formats
}

// repackMovesDamaged says what `rook store repack` does with damaged
// segment regions that hold no object any more: it copies every object
// out of their segments and moves the segments to the store's torn/
// directory, where they are kept (nothing is deleted).
func repackMovesDamaged(home string) string {
	return fmt.Sprintf("`rook store repack` moves the segment(s) holding them to %s%c (kept there, nothing deleted)", filepath.Join(home, cas.TornDir), filepath.Separator)
}
