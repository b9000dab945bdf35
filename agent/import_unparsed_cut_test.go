package agent

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

// An import cut short part way through a file (SIGKILL, a crash, Ctrl-C
// twice), after it took in a line that does not parse, prints no summary;
// the next import takes the file up from what is in (README). It used to
// say "grown", count the lines it added, and never name the line that did
// not parse, nor did any later import (a 104 MiB file with a bad line 51,
// killed after 0.5 s: the rerun said nothing of line 51). The lines the
// cut import took in and did not record (the session's log goes on past
// its metadata's size) are mapped again by the rerun, and those that did
// not parse reported (fileImport.reportFrom).
//
// The test kills the import (vfs.MemFS.KillClone: what a SIGKILL leaves,
// every write kept) at a third, half and two thirds of its writes, and
// imports again: whenever the killed one had taken in part of the file
// (the rerun says "grown"), the rerun must name line 3, which the killed
// one never reported. (Kills after the whole file was in:
// TestImportCutAfterItsMetadataStillReportsTheLinesThatDidNotParse.)
func TestImportCutShortStillReportsTheLinesThatDidNotParse(t *testing.T) {
	var lines []string
	lines = append(lines, claudeLines("g", 1)[:2]...)
	lines = append(lines, `{"type":"user","this line is damaged`)
	for turn := 2; turn <= 1500; turn++ {
		lines = append(lines, claudeLines("g", turn)...)
	}
	data := writeSourceBytes(lines, "")
	src := "/src/g.jsonl"
	clk := &clock.Fixed{}
	importOnce := func(fsys vfs.FS) (ImportReport, error) {
		r, err := Open(crashHome, Options{FS: fsys, Clock: clk, Writable: true})
		if err != nil {
			return ImportReport{}, err
		}
		rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{"/src"}, ChunkBytes: 64 << 10})
		if cerr := r.Close(); err == nil {
			err = cerr
		}
		return rep, err
	}
	names3 := func(rep ImportReport) bool {
		for _, p := range rep.Problems {
			if p.File == src && p.Line == 3 {
				return true
			}
		}
		return false
	}
	setup := func(fsys *vfs.MemFS) {
		initCrashStore(fsys)
		writeAt(t, fsys, clk, src, data, time.Hour)
	}
	// The reference: an import that is not cut names line 3.
	ref := vfs.NewMem()
	setup(ref)
	writes := 0
	ref.SetHook(func(op vfs.Op, _ string) error {
		if op.IsWrite() {
			writes++
		}
		return nil
	})
	if rep, err := importOnce(ref); err != nil || !names3(rep) || rep.Unparsed != 1 {
		t.Fatalf("uncut import: err %v, unparsed %d, problems %+v: want line 3 named", err, rep.Unparsed, rep.Problems)
	}
	var missed []string
	grown := 0
	for _, k := range []int{writes / 3, writes / 2, 2 * writes / 3} {
		fsys := vfs.NewMem()
		setup(fsys)
		kill := killAtWrite(fsys, k)
		_, err := importOnce(fsys)
		killed := kill()
		if killed == nil {
			t.Fatalf("no kill at write %d of %d (err %v)", k, writes, err)
		}
		rep, err := importOnce(killed)
		if err != nil {
			t.Fatalf("killed at write %d: import again: %v", k, err)
		}
		if len(rep.Files) != 1 || rep.Files[0].Status == ImportFailed {
			t.Fatalf("killed at write %d: import again: %+v", k, rep.Files)
		}
		if rep.Files[0].Status == ImportGrown {
			grown++
		}
		if !names3(rep) && rep.Files[0].Status != ImportUnchanged {
			missed = append(missed, fmt.Sprintf("write %d (%s, %d line(s) added, unparsed %d)",
				k, rep.Files[0].Status, rep.Files[0].Lines, rep.Unparsed))
		}
	}
	if grown == 0 {
		t.Fatal("no kill point left part of the file in: the test does not reach the case")
	}
	if len(missed) > 0 {
		t.Errorf("an import killed part way (it printed nothing) after it took in line 3, which does not parse, "+
			"then imported again: no import ever names %s:3; at %d kill point(s): %v", src, len(missed), missed)
	}
}

// An import cut short after it took in the whole file and recorded it (its
// metadata durable, the rerun finds the file unchanged) and before it
// made its report: the metadata keeps the lines that did not parse
// (Source.Unreported) until the import's report is made, and the rerun
// reports them, once. Every kill point up to the write that clears them
// (the store's close, after the report is made) is tried, and the first
// write after Import returned (the CLI prints its summary once the store
// is closed: Ctrl-C twice as it closes, and the summary was lost while
// the metadata said the file was in); an import not cut short reports the
// line once, and clears the record. The clearing write is the close's
// last, its directory's sync alone after it: it was the event log's
// close, before the store's wrote its index, and a kill during that
// (a third of late SIGKILLs by hand) lost the report for good.
func TestImportCutAfterItsMetadataStillReportsTheLinesThatDidNotParse(t *testing.T) {
	var lines []string
	lines = append(lines, claudeLines("u", 1)[:2]...)
	lines = append(lines, `{"type":"user","this line is damaged`)
	for turn := 2; turn <= 60; turn++ {
		lines = append(lines, claudeLines("u", turn)...)
	}
	data := writeSourceBytes(lines, "")
	src := "/src/u.jsonl"
	clk := &clock.Fixed{}
	returned := func() {}
	importOnce := func(fsys vfs.FS) (ImportReport, error) {
		r, err := Open(crashHome, Options{FS: fsys, Clock: clk, Writable: true})
		if err != nil {
			return ImportReport{}, err
		}
		rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{"/src"}})
		returned()
		if cerr := r.Close(); err == nil {
			err = cerr
		}
		return rep, err
	}
	names3 := func(rep ImportReport) int {
		n := 0
		for _, p := range rep.Problems {
			if p.File == src && p.Line == 3 {
				n++
			}
		}
		return n
	}
	setup := func(fsys *vfs.MemFS) {
		initCrashStore(fsys)
		writeAt(t, fsys, clk, src, data, time.Hour)
	}
	ref := vfs.NewMem()
	setup(ref)
	writes, lastMeta, atReturn, lastIndex := 0, -1, -1, -1
	var after []string // the writes after the last metadata write
	returned = func() { atReturn = writes }
	ref.SetHook(func(op vfs.Op, path string) error {
		if op.IsWrite() {
			switch {
			case strings.Contains(path, ".meta"):
				lastMeta = writes
				after = after[:0]
			default:
				if strings.Contains(path, "objects.idx") {
					lastIndex = writes
				}
				after = append(after, op.String()+" "+path)
			}
			writes++
		}
		return nil
	})
	if rep, err := importOnce(ref); err != nil || names3(rep) != 1 || rep.Unparsed != 1 {
		t.Fatalf("uncut import: err %v, unparsed %d, problems %+v: want line 3 named once", err, rep.Unparsed, rep.Problems)
	}
	ref.SetHook(nil)
	returned = func() {}
	if lastMeta < 0 || atReturn < 0 || atReturn >= writes {
		t.Fatalf("the import wrote no metadata (%d), or nothing after it returned (%d of %d writes)", lastMeta, atReturn, writes)
	}
	// What a kill after the clearing write loses (the summary not printed
	// yet): only that write's own directory sync may come after it; the
	// store's index, written by its close, before it.
	if lastIndex < atReturn || lastIndex > lastMeta || len(after) > 1 || (len(after) == 1 && after[0] != "syncdir "+crashHome+"/events") {
		t.Fatalf("the clearing metadata write (write %d of %d; Import returned at %d, the index last written at %d) is not the close's last: after it %v",
			lastMeta, writes, atReturn, lastIndex, after)
	}
	if rep, err := importOnce(ref); err != nil || names3(rep) != 0 || rep.Unparsed != 0 {
		t.Fatalf("import again after an uncut one: err %v, unparsed %d, problems %+v: want nothing reported again", err, rep.Unparsed, rep.Problems)
	}
	r, err := Open(crashHome, Options{FS: ref, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := r.Log.IDs()
	if err != nil || len(ids) != 1 {
		t.Fatalf("after an uncut import: %v, sessions %v: want one", err, ids)
	}
	m, err := r.Log.ReadMeta(ids[0])
	r.Close()
	if err != nil || m.Source == nil || m.Source.Unreported != nil {
		t.Fatalf("after an uncut import: %v, %+v: want its record of the unreported lines cleared", err, m.Source)
	}
	unchanged := 0
	kills := []int{atReturn}
	for k := 0; k <= lastMeta; k++ {
		kills = append(kills, k)
	}
	for _, k := range kills {
		fsys := vfs.NewMem()
		setup(fsys)
		kill := killAtWrite(fsys, k)
		importOnce(fsys)
		killed := kill()
		if killed == nil {
			t.Fatalf("no kill at write %d", k)
		}
		rep, err := importOnce(killed)
		if err != nil || len(rep.Files) != 1 {
			t.Fatalf("killed at write %d: import again: %v, %+v", k, err, rep.Files)
		}
		if rep.Files[0].Status == ImportUnchanged {
			unchanged++
		}
		if names3(rep) != 1 || rep.Unparsed != 1 {
			t.Errorf("killed at write %d of %d (metadata last written at %d, Import returned at %d): import again (%s, %d line(s)): unparsed %d, line 3 named %d time(s): want once",
				k, writes, lastMeta, atReturn, rep.Files[0].Status, rep.Files[0].Lines, rep.Unparsed, names3(rep))
		}
		if again, err := importOnce(killed); err != nil || again.Unparsed != 0 || names3(again) != 0 {
			t.Errorf("killed at write %d: the import after the rerun: err %v, unparsed %d: want nothing reported again", k, err, again.Unparsed)
		}
	}
	if unchanged == 0 {
		t.Error("no kill point left the whole file in, recorded: the test does not reach the case")
	}
}

// Two imports on one Rook before it is closed (the record of what the
// first reported is cleared at the close, its last write): the second
// does not report again the line the first reported, and the close
// clears the record.
func TestImportAgainBeforeTheCloseDoesNotReportTwice(t *testing.T) {
	lines := append(claudeLines("w", 1)[:2], `{"type":"user","this line is damaged`)
	lines = append(lines, claudeLines("w", 2)...)
	clk := &clock.Fixed{}
	fsys := vfs.NewMem()
	initCrashStore(fsys)
	writeAt(t, fsys, clk, "/src/w.jsonl", writeSourceBytes(lines, ""), time.Hour)
	r, err := Open(crashHome, Options{FS: fsys, Clock: clk, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{1, 0} {
		rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{"/src"}})
		if err != nil || rep.Unparsed != want || len(rep.Problems) != want {
			t.Fatalf("import %d: err %v, unparsed %d, problems %+v: want %d", i+1, err, rep.Unparsed, rep.Problems, want)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r, err = Open(crashHome, Options{FS: fsys, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ids, err := r.Log.IDs()
	if err != nil || len(ids) != 1 {
		t.Fatalf("%v, sessions %v: want one", err, ids)
	}
	if m, err := r.Log.ReadMeta(ids[0]); err != nil || m.Source == nil || m.Source.Unreported != nil {
		t.Fatalf("after the close: %v, %+v: want the record cleared", err, m.Source)
	}
}

// killAtWrite arms fsys to be killed at its k-th write (counting from 0),
// as SIGKILL kills an import: what was written before stays, that write
// and every operation after it fail. kill gives the store as the kill
// left it (a clone taken then), nil when no k-th write came.
func killAtWrite(fsys *vfs.MemFS, k int) (kill func() *vfs.MemFS) {
	var killed *vfs.MemFS
	n := 0
	fsys.SetHook(func(op vfs.Op, _ string) error {
		if !op.IsWrite() {
			if killed != nil {
				return vfs.ErrInjected
			}
			return nil
		}
		n++
		switch {
		case n-1 < k:
			return nil
		case n-1 == k:
			killed = fsys.KillClone()
		}
		return vfs.ErrInjected
	})
	return func() *vfs.MemFS { return killed }
}
