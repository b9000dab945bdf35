package inbox

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rookhq/rook/internal/vfs"
)

func newHome(t *testing.T) (*vfs.MemFS, string) {
	fsys := vfs.NewMem()
	home := "/h"
	makeStore(t, fsys, home)
	return fsys, home
}

// makeStore makes a store at home (its directory and FORMAT marker), as
// `rook init` does: a store made again, in tests of one moved aside.
func makeStore(t *testing.T, fsys *vfs.MemFS, home string) {
	t.Helper()
	if err := fsys.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFileAtomic(home+"/FORMAT", []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// pendingTimes is how many times the spools of the stores at homes hold
// a save whose content is content.
func pendingTimes(t *testing.T, fsys *vfs.MemFS, content string, homes ...string) int {
	t.Helper()
	n := 0
	for _, h := range homes {
		pending, _, err := ReadPending(fsys, h, Progress{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pending {
			if p.Save.Content == content {
				n++
			}
		}
	}
	return n
}

// TestFailedSaveLeavesNothing: a save whose write or sync fails is cut off
// again, so the drain never takes in a note the client was told failed, and
// the next save is whole.
func TestFailedSaveLeavesNothing(t *testing.T) {
	fsys, home := newHome(t)
	w := NewWriter(fsys, home, ProcessName(time.Unix(1, 0), 42))
	now := time.Unix(100, 0)
	save := func(content string) error {
		return w.Save(Save{ID: w.NextID(now), Time: now, Client: "codex", ClientName: "codex", Content: content})
	}
	if err := save("first"); err != nil {
		t.Fatal(err)
	}
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.Contains(path, "/spool/") {
			return vfs.ErrInjected
		}
		return nil
	})
	if err := save("failed"); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("save with a failing sync: %v", err)
	}
	fsys.SetHook(nil)
	if err := save("third"); err != nil {
		t.Fatal(err)
	}
	pending, _, err := ReadPending(fsys, home, Progress{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pending {
		got = append(got, p.Save.Content)
	}
	if strings.Join(got, ",") != "first,third" {
		t.Fatalf("drain would take %v", got)
	}
}

// TestTornLinesAreSkipped: a line without its newline (being written) or
// with a bad checksum (torn) is not a save.
func TestTornLinesAreSkipped(t *testing.T) {
	fsys, home := newHome(t)
	good, _ := encodeLine(Save{V: 1, ID: "a", Client: "c", Content: "x"})
	bad := []byte(strings.Replace(string(good), `"x"`, `"y"`, 1))
	partial, _ := encodeLine(Save{V: 1, ID: "b", Client: "c", Content: "z"})
	fsys.MkdirAll(spoolDir(home), 0o700)
	data := append(append(append([]byte{}, good...), bad...), partial[:len(partial)-1]...)
	fsys.WriteFileAtomic(spoolDir(home)+"/1-2.jsonl", data, 0o600)
	pending, sizes, err := ReadPending(fsys, home, Progress{})
	if err != nil || len(pending) != 1 || pending[0].Save.ID != "a" || sizes["1-2.jsonl"] != int64(len(data)) {
		t.Fatalf("%+v %v", pending, err)
	}
	// Drained up to the good line; the partial one is left for later.
	if pending[0].End != int64(len(good)) {
		t.Fatalf("end %d", pending[0].End)
	}
}

// TestReadPendingFileRemovedByDrainMidRead: ReadPending takes no lock
// (`inbox status`), and another rook's drain removes the spool files of
// exited servers it has taken in whole. One removed between the listing of
// inbox/spool and its read holds nothing waiting: the status counts the
// other files' saves, rather than fail with "open ...: no such file".
func TestReadPendingFileRemovedByDrainMidRead(t *testing.T) {
	fsys, home := newHome(t)
	now := time.Unix(100, 0)
	gone := NewWriter(fsys, home, ProcessName(time.Unix(1, 0), 41))
	if err := gone.Save(Save{ID: gone.NextID(now), Time: now, Client: "codex", ClientName: "codex", Content: "drained"}); err != nil {
		t.Fatal(err)
	}
	if err := gone.Close(); err != nil {
		t.Fatal(err)
	}
	live := NewWriter(fsys, home, ProcessName(time.Unix(2, 0), 42))
	defer live.Close()
	if err := live.Save(Save{ID: live.NextID(now), Time: now, Client: "claude", ClientName: "claude-code", Content: "waiting"}); err != nil {
		t.Fatal(err)
	}
	goneName := ProcessName(time.Unix(1, 0), 41) + ".jsonl"
	var once sync.Once
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpOpenRead && strings.HasSuffix(path, "/spool/"+goneName) {
			// Another rook's drain took this exited server's file in and
			// removed it, just after this reader listed the folder.
			once.Do(func() {
				if err := fsys.Remove(path); err != nil {
					t.Error(err)
				}
			})
		}
		return nil
	})
	pending, _, err := ReadPending(fsys, home, Progress{})
	fsys.SetHook(nil)
	if err != nil {
		t.Fatalf("ReadPending while a drain removes a drained spool file: %v (`rook inbox status` exits 1 with it)", err)
	}
	if len(pending) != 1 || pending[0].Save.Content != "waiting" {
		t.Fatalf("pending = %+v, want the live server's one save", pending)
	}
}

// countFS counts the bytes read from files whose path contains sub.
type countFS struct {
	*vfs.MemFS
	sub string
	n   *int64
}

func (c countFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := c.MemFS.OpenFile(name, flag, perm)
	if err != nil || !strings.Contains(name, c.sub) {
		return f, err
	}
	return countFile{f, c.n}, nil
}

type countFile struct {
	vfs.File
	n *int64
}

func (f countFile) Read(p []byte) (int, error) {
	k, err := f.File.Read(p)
	*f.n += int64(k)
	return k, err
}

func (f countFile) ReadAt(p []byte, off int64) (int, error) {
	k, err := f.File.ReadAt(p, off)
	*f.n += int64(k)
	return k, err
}

// TestReadPendingReadsOnlyPastDrained: a server's spool file stays while
// its process lives (days), holding every save it made. ReadPending, run by
// every rook that opens the store to write and by `inbox status`, reads
// from the drained offset, not the whole file (a spool of 39 MB long taken
// in made `inbox status` peak at 54 MB instead of 13).
func TestReadPendingReadsOnlyPastDrained(t *testing.T) {
	mem, home := newHome(t)
	var n int64
	fsys := countFS{MemFS: mem, sub: "/spool/", n: &n}
	w := NewWriter(fsys, home, ProcessName(time.Unix(1, 0), 42))
	defer w.Close()
	now := time.Unix(100, 0)
	big := strings.Repeat("x", 50_000)
	for range 20 {
		if err := w.Save(Save{ID: w.NextID(now), Time: now, Client: "claude", ClientName: "Claude Desktop", Content: big}); err != nil {
			t.Fatal(err)
		}
	}
	_, sizes, err := ReadPending(fsys, home, Progress{})
	if err != nil {
		t.Fatal(err)
	}
	prog := Progress{}
	var total int64
	for name, size := range sizes {
		prog[name] = size // all of it taken in
		total += size
	}
	n = 0
	pending, _, err := ReadPending(fsys, home, prog)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 0 {
		t.Fatalf("pending = %d, want none", len(pending))
	}
	if n > total/2 {
		t.Fatalf("ReadPending read %d bytes of a %d-byte spool file drained to its end: the drained part is read again by every writer's open", n, total)
	}
}

// TestReadPendingLongLines: a spool file is read a line at a time from the
// drained offset: a save longer than the read buffer is read whole, a line
// longer than any a server writes is skipped (as a line failing its
// checksum is), and the offsets stay exact past both.
func TestReadPendingLongLines(t *testing.T) {
	defer func(n int) { maxSpoolLine = n }(maxSpoolLine)
	maxSpoolLine = 300_000
	fsys, home := newHome(t)
	long, _ := encodeLine(Save{V: 1, ID: "long", Client: "c", Content: strings.Repeat("é", 100_000)})
	over, _ := encodeLine(Save{V: 1, ID: "over", Client: "c", Content: strings.Repeat("x", 400_000)})
	short, _ := encodeLine(Save{V: 1, ID: "short", Client: "c", Content: "x"})
	partial, _ := encodeLine(Save{V: 1, ID: "partial", Client: "c", Content: strings.Repeat("y", 100_000)})
	var data []byte
	for _, b := range [][]byte{short, long, over, short, partial[:len(partial)-1]} {
		data = append(data, b...)
	}
	fsys.MkdirAll(spoolDir(home), 0o700)
	fsys.WriteFileAtomic(spoolDir(home)+"/1-2.jsonl", data, 0o600)
	end1 := int64(len(short))
	end2 := end1 + int64(len(long))
	end4 := end2 + int64(len(over)+len(short))
	for _, tc := range []struct {
		from int64
		ids  []string
		ends []int64
	}{
		{0, []string{"short", "long", "short"}, []int64{end1, end2, end4}},
		{end1, []string{"long", "short"}, []int64{end2, end4}},
		{end2, []string{"short"}, []int64{end4}},
		{end4, nil, nil},
		{int64(len(data)) + 1, []string{"short", "long", "short"}, []int64{end1, end2, end4}}, // replaced: from the start
	} {
		pending, sizes, err := ReadPending(fsys, home, Progress{"1-2.jsonl": tc.from})
		if err != nil || sizes["1-2.jsonl"] != int64(len(data)) || len(pending) != len(tc.ids) {
			t.Fatalf("from %d: %d pending, sizes %v, %v", tc.from, len(pending), sizes, err)
		}
		for i, p := range pending {
			if p.Save.ID != tc.ids[i] || p.End != tc.ends[i] {
				t.Fatalf("from %d: pending[%d] = %s ending at %d, want %s at %d", tc.from, i, p.Save.ID, p.End, tc.ids[i], tc.ends[i])
			}
		}
		if tc.from == end1 && pending[0].Save.Content != strings.Repeat("é", 100_000) {
			t.Fatalf("the long save came back as %d bytes", len(pending[0].Save.Content))
		}
	}
}

func TestInboxNames(t *testing.T) {
	for name, want := range map[string]string{
		"claude-code": "claude/Claude Inbox", "Claude Desktop": "claude/Claude Inbox", "claude-ai": "claude/Claude Inbox",
		"codex-mcp-client": "codex/Codex Inbox", "Cursor": "cursor/Cursor Inbox", "gemini-cli-mcp-client": "gemini/Gemini Inbox",
		"Zed\x07": "zed/Zed Inbox", "": "unknown client/unknown client Inbox",
	} {
		s, title := Inbox(name)
		if s+"/"+title != want {
			t.Fatalf("%q: %s/%s, want %s", name, s, title, want)
		}
	}
	if ProcessPID(ProcessName(time.Unix(5, 0), 1234)) != 1234 {
		t.Fatal("pid")
	}
}

// TestInboxNameClean: a client's name becomes an inbox name and title that
// print safely: no control character (C1 ones included, as in titles), no
// character cut in half by the length limit, no blank name.
func TestInboxNameClean(t *testing.T) {
	long := strings.Repeat("a", 63) + "é"
	for name, want := range map[string]string{
		long:              strings.Repeat("a", 63),
		"Zed\u009b31m":    "zed31m",
		"\x01 \x01":       "unknown client",
		" \x1b Zed \x1b":  "zed",
		"Zed\u2028Edit":   "zededit",
		"evil\u202e":      "evil",
		"Z\u200bed\ufeff": "zed",
		"\u2066\u2069":    "unknown client",
		// Unicode spaces are typed as ASCII ones: a name shown as
		// "my client" is found as "my client".
		"my\u00a0client":            "my client",
		"\u3000Zed\u2009Edit\u00a0": "zed edit",
		// Cut after cleaning: blanks and controls before a long name
		// do not take its 64 bytes, and the cut falls where an older
		// rook cut (before folding Unicode spaces: see TypedName).
		strings.Repeat(" ", 70) + "Zed Editor":           "zed editor",
		strings.Repeat("\u200b", 30) + "Zed":             "zed",
		"\u200bClaude Desktop" + strings.Repeat(" ", 70): "claude",
		"アクメ\u3000アシスタント\u3000デスクトップ版\u3000プレビュー":        "アクメ アシスタント デスクトップ版 プレ",
	} {
		s, title := Inbox(name)
		if !utf8.ValidString(s) || !utf8.ValidString(title) {
			t.Fatalf("%q: not UTF-8: %q / %q", name, s, title)
		}
		if s != want {
			t.Fatalf("%q: short name %q, want %q", name, s, want)
		}
		// The drain titles a new inbox from the name a save recorded:
		// it names the same inbox, with the same title.
		if s2, title2 := Inbox(CutClientName(name)); s2 != s || title2 != title {
			t.Fatalf("%q: recorded as %q, named %q/%q, not %q/%q", name, CutClientName(name), s2, title2, s, title)
		}
		if s != "claude" && s != UnknownClient && strings.ToLower(strings.TrimSuffix(title, " Inbox")) != s {
			t.Fatalf("%q: titled %q, named %q", name, title, s)
		}
	}
}

// TestCutClientName: a client's name is recorded cut to MaxClientName
// bytes, on a character boundary; a short one whole.
func TestCutClientName(t *testing.T) {
	long := strings.Repeat("N", 100_000)
	if got := CutClientName(long); got != long[:MaxClientName] {
		t.Fatalf("cut to %d bytes", len(got))
	}
	if got := CutClientName(strings.Repeat("a", MaxClientName-1) + "é"); got != strings.Repeat("a", MaxClientName-1) {
		t.Fatalf("cut inside a character: %q", got)
	}
	if got := CutClientName("Zed"); got != "Zed" {
		t.Fatalf("%q", got)
	}
	// Cleaned before the cut: blanks and controls do not take the bytes
	// of the name.
	if got := CutClientName(strings.Repeat(" ", 70) + "Zed\u202e Editor "); got != "Zed Editor" {
		t.Fatalf("leading blanks: %q", got)
	}
	fsys, home := newHome(t)
	w := NewWriter(fsys, home, "1-2")
	if err := w.Save(Save{ID: w.NextID(time.Now()), ClientName: long, Content: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Log(Activity{ClientName: long, Status: "saved"}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	pending, _, err := ReadPending(fsys, home, Progress{})
	acts, aerr := ReadActivity(fsys, home)
	if err != nil || aerr != nil || len(pending) != 1 || len(acts) != 1 {
		t.Fatalf("%v %v %d %d", err, aerr, len(pending), len(acts))
	}
	if len(pending[0].Save.ClientName) != MaxClientName || len(acts[0].ClientName) != MaxClientName {
		t.Fatalf("recorded %d and %d bytes of the name", len(pending[0].Save.ClientName), len(acts[0].ClientName))
	}
}

// TestReadSpoolDamagedLine: a complete line failing its checksum before a
// save of its file is damage, reported with its bytes' place; one at the
// file's end (torn, or followed by a save still to come) is not.
func TestReadSpoolDamagedLine(t *testing.T) {
	fsys, home := newHome(t)
	a, _ := encodeLine(Save{V: 1, ID: "a", Client: "c", Content: "x"})
	b, _ := encodeLine(Save{V: 1, ID: "b", Client: "c", Content: "y"})
	bad := []byte(strings.Replace(string(b), `"y"`, `"z"`, 1))
	fsys.MkdirAll(spoolDir(home), 0o700)
	data := append(append(append(append([]byte{}, lockedLine...), a...), bad...), b...)
	data = append(data, bad...) // a last line: torn
	fsys.WriteFileAtomic(spoolDir(home)+"/1-2.jsonl", data, 0o600)
	s, err := ReadSpool(fsys, home, Progress{})
	if err != nil || len(s.Pending) != 2 || len(s.Damaged) != 1 {
		t.Fatalf("%+v %v", s, err)
	}
	start := int64(len(lockedLine) + len(a))
	if d := s.Damaged[0]; d.File != "1-2.jsonl" || d.Start != start || d.End != start+int64(len(bad)) {
		t.Fatalf("%+v", d)
	}
	kept, err := KeepDamaged(fsys, home, s.Damaged[0])
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := vfs.ReadFile(fsys, kept); string(got) != string(bad) {
		t.Fatalf("kept %q", got)
	}
	// Kept again (a drain cut short, done again): the same copy, named
	// by file and offset, not a second one.
	if again, err := KeepDamaged(fsys, home, s.Damaged[0]); err != nil || again != kept || !strings.HasSuffix(kept, fmt.Sprintf("inbox-spool.1-2.jsonl.%d", start)) {
		t.Fatalf("kept again as %q (%v), first as %q", again, err, kept)
	}
	// Other bytes under that name (a file replaced since) stay; these
	// get the next name.
	fsys.WriteFileAtomic(kept, []byte("other bytes\n"), 0o600)
	if other, err := KeepDamaged(fsys, home, s.Damaged[0]); err != nil || other != kept+".2" {
		t.Fatalf("kept beside other bytes as %q (%v)", other, err)
	}
	// From past it, nothing is damaged.
	if s, _ = ReadSpool(fsys, home, Progress{"1-2.jsonl": s.Pending[1].End}); len(s.Damaged) != 0 || len(s.Pending) != 0 {
		t.Fatalf("%+v", s)
	}
}

// TestSaveReader: ReadSpool lists the saves without their contents (a
// backlog is not held); SaveReader reads each back whole, and says so
// when its line is no longer that save (cut off by its writer since).
func TestSaveReader(t *testing.T) {
	fsys, home := newHome(t)
	a, _ := encodeLine(Save{V: 1, ID: "a", Client: "c", ClientName: strings.Repeat("N", 1000), Title: "ta", Content: "x"})
	b, _ := encodeLine(Save{V: 1, ID: "b", Client: "c", Title: "tb", Content: "y"})
	fsys.MkdirAll(spoolDir(home), 0o700)
	path := spoolDir(home) + "/1-2.jsonl"
	fsys.WriteFileAtomic(path, append(append(append([]byte{}, lockedLine...), a...), b...), 0o600)
	s, err := ReadSpool(fsys, home, Progress{})
	if err != nil || len(s.Pending) != 2 {
		t.Fatalf("%+v %v", s, err)
	}
	for _, p := range s.Pending {
		if p.Save.Content != "" || p.Save.Title != "" || len(p.Save.ClientName) > MaxClientName {
			t.Fatalf("listed with its content: %+v", p.Save)
		}
	}
	if p := s.Pending[1]; p.Start != int64(len(lockedLine)+len(a)) || p.End != p.Start+int64(len(b)) {
		t.Fatalf("%+v", p)
	}
	rd := NewSaveReader(fsys, home)
	defer rd.Close()
	for i, want := range []string{"x", "y"} {
		got, err := rd.Read(s.Pending[i])
		if err != nil || got.Content != want || got.ID != s.Pending[i].Save.ID || got.Title != "t"+got.ID {
			t.Fatalf("read back %+v, %v", got, err)
		}
	}
	if got, err := rd.Read(s.Pending[0]); err != nil || len(got.ClientName) != 1000 {
		t.Fatalf("read back %d bytes of the name, %v", len(got.ClientName), err)
	}
	// The writer cut its last save off (its sync failed) and saved
	// another: the line listed is no longer that save.
	c, _ := encodeLine(Save{V: 1, ID: "c", Client: "c", Content: "zz"})
	fsys.WriteFileAtomic(path, append(append(append([]byte{}, lockedLine...), a...), c...), 0o600)
	rd.Close()
	if _, err := rd.Read(s.Pending[1]); !errors.Is(err, ErrSpoolChanged) {
		t.Fatalf("a save replaced: %v", err)
	}
	fsys.WriteFileAtomic(path, append(append([]byte{}, lockedLine...), a...), 0o600)
	rd.Close()
	if _, err := rd.Read(s.Pending[1]); !errors.Is(err, ErrSpoolChanged) {
		t.Fatalf("a save cut off: %v", err)
	}
}

// TestReadSpoolPassesOverUnreadableFile: a spool file that cannot be read
// is named, with its error and what to do; the others are read.
func TestReadSpoolPassesOverUnreadableFile(t *testing.T) {
	fsys, home := newHome(t)
	for _, name := range []string{"1-2", "3-4", "5-6"} {
		w := NewWriter(fsys, home, name)
		if err := w.Save(Save{ID: w.NextID(time.Now()), Client: "c", Content: name}); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpOpenRead && strings.HasSuffix(path, "3-4.jsonl") {
			return &fs.PathError{Op: "open", Path: path, Err: fs.ErrPermission}
		}
		return nil
	})
	defer fsys.SetHook(nil)
	s, err := ReadSpool(fsys, home, Progress{})
	if err != nil || len(s.Pending) != 2 || len(s.Unreadable) != 1 || len(s.Sizes) != 2 {
		t.Fatalf("%+v %v", s, err)
	}
	if adv := s.Unreadable[0].Advice(); !strings.Contains(adv, "3-4.jsonl") || !strings.Contains(adv, "permission denied") || !strings.Contains(adv, "chown") {
		t.Fatalf("%s", adv)
	}
}

// TestDamagedProgress: a drained.json that is JSON but not a map of
// offsets (null, a negative offset) is damaged like one that is not JSON:
// an error that says what to do, never a panic in the drain.
func TestDamagedProgress(t *testing.T) {
	for _, content := range []string{"null", `{"a.jsonl":-5}`, "[]", "garbage"} {
		fsys, home := newHome(t)
		if err := fsys.MkdirAll(Dir(home), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := fsys.WriteFileAtomic(drainedPath(home), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := ReadProgress(fsys, home)
		if err == nil || !strings.Contains(err.Error(), "is damaged") {
			t.Fatalf("%s: progress %v, error %v", content, p, err)
		}
	}
}

// TestRemoveDrainedKeepsLaterSaves: a server that saves after the drain read
// its spool file, then exits before the drain is done, keeps those saves:
// the file is not removed as drained, and the next drain takes them in.
func TestRemoveDrainedKeepsLaterSaves(t *testing.T) {
	fsys, home := newHome(t)
	w := NewWriter(fsys, home, ProcessName(time.Unix(1, 0), 42))
	now := time.Unix(100, 0)
	save := func(content string) {
		t.Helper()
		if err := w.Save(Save{ID: w.NextID(now), Time: now, Client: "codex", ClientName: "codex", Content: content}); err != nil {
			t.Fatal(err)
		}
	}
	save("read by the drain")
	prog := Progress{}
	pending, sizes, err := ReadPending(fsys, home, prog)
	if err != nil || len(pending) != 1 {
		t.Fatalf("%+v %v", pending, err)
	}
	prog[pending[0].File] = pending[0].End
	// While the drain appends what it read, the server saves once more
	// and exits.
	save("saved during the drain")
	w.Close()
	if _, err := RemoveDrained(fsys, home, prog, sizes, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	pending, _, err = ReadPending(fsys, home, prog)
	if err != nil || len(pending) != 1 || pending[0].Save.Content != "saved during the drain" {
		t.Fatalf("after the drain: %+v %v", pending, err)
	}
	// Once that is drained too, the file goes.
	prog[pending[0].File] = pending[0].End
	_, sizes, err = ReadPending(fsys, home, prog)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RemoveDrained(fsys, home, prog, sizes, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if names, _ := listJSONL(fsys, spoolDir(home)); len(names) != 0 || len(prog) != 0 {
		t.Fatalf("left %v, progress %v", names, prog)
	}
}

// TestMergeActivity: the activity files of exited server processes are
// merged into one, bounded, and `inbox activity` reads the same attempts
// from it; a live process's file is left alone, and a merge cut short
// before it removed the merged files takes nothing twice.
func TestMergeActivity(t *testing.T) {
	fsys, home := newHome(t)
	at := time.Unix(1000, 0)
	var running103 *Writer
	for p := range 4 {
		w := NewWriter(fsys, home, ProcessName(at, 100+p))
		for i := range 3 {
			if err := w.Log(Activity{Time: at.Add(time.Duration(i*4+p) * time.Second), Client: "codex", Status: "saved", Chars: p*10 + i}); err != nil {
				t.Fatal(err)
			}
		}
		if p == 3 {
			running103 = w // still running: its spool file's lock is held
			continue
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	before, err := ReadActivity(fsys, home)
	if err != nil || len(before) != 12 {
		t.Fatalf("%d %v", len(before), err)
	}
	live := ProcessName(at, 103)
	running := func(name string) bool { return name == live }
	files := func() []string {
		names, err := listJSONL(fsys, activityDir(home))
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	saved, _ := vfs.ReadFile(fsys, activityDir(home)+"/"+ProcessName(at, 100)+".jsonl")
	if err := MergeActivity(fsys, home, running); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(files(), " "); got != live+".jsonl past.jsonl" {
		t.Fatalf("files after the merge: %s", got)
	}
	check := func(want []Activity) {
		t.Helper()
		after, err := ReadActivity(fsys, home)
		if err != nil || len(after) != len(want) {
			t.Fatalf("%d attempts, want %d: %v", len(after), len(want), err)
		}
		for i := range want {
			if !after[i].Time.Equal(want[i].Time) || after[i].Chars != want[i].Chars {
				t.Fatalf("attempt %d: %+v, want %+v", i, after[i], want[i])
			}
		}
	}
	check(before)
	// A merge cut short: a merged file is back. Merged again, once.
	if err := fsys.WriteFileAtomic(activityDir(home)+"/"+ProcessName(at, 100)+".jsonl", saved, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := MergeActivity(fsys, home, running); err != nil {
		t.Fatal(err)
	}
	check(before)
	// The live one exits; the merged file keeps only the newest attempts.
	if err := running103.Close(); err != nil {
		t.Fatal(err)
	}
	defer func(n int) { keepActivity = n }(keepActivity)
	keepActivity = 5
	if err := MergeActivity(fsys, home, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(files(), " "); got != "past.jsonl" {
		t.Fatalf("files after the last merge: %s", got)
	}
	check(before[len(before)-5:])
}

// TestReadActivityWhileMerged: `inbox activity` takes no lock, and a
// writer's open merges the files of exited servers meanwhile. A file
// listed and merged before it was read failed the command ("no such file
// or directory"); a merge cut short between writing past.jsonl and
// removing what it merged showed those attempts twice. Every attempt is
// listed once either way.
func TestReadActivityWhileMerged(t *testing.T) {
	fsys, home := newHome(t)
	at := time.Unix(1000, 0)
	for p := range 2 {
		w := NewWriter(fsys, home, ProcessName(at, 100+p))
		for i := range 3 {
			if err := w.Log(Activity{Time: at.Add(time.Duration(i*2+p) * time.Second), Client: "codex", Status: "saved", Chars: p*10 + i}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	exited := func(string) bool { return false }
	saved, err := vfs.ReadFile(fsys, activityDir(home)+"/"+ProcessName(at, 100)+".jsonl")
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string) {
		t.Helper()
		acts, err := ReadActivity(fsys, home)
		if err != nil || len(acts) != 6 {
			t.Fatalf("%s: %d attempts, want 6: %v", what, len(acts), err)
		}
		for i, a := range acts {
			if want := at.Add(time.Duration(i) * time.Second); !a.Time.Equal(want) {
				t.Fatalf("%s: attempt %d at %v, want %v", what, i, a.Time, want)
			}
		}
	}
	// Another rook merges just as the first file listed is opened.
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpOpenRead && strings.HasSuffix(path, ProcessName(at, 100)+".jsonl") {
			fsys.SetHook(nil)
			if err := MergeActivity(fsys, home, exited); err != nil {
				t.Error(err)
			}
		}
		return nil
	})
	check("merged while read")
	// A merge cut short: a merged file is still there.
	if err := fsys.WriteFileAtomic(activityDir(home)+"/"+ProcessName(at, 100)+".jsonl", saved, 0o600); err != nil {
		t.Fatal(err)
	}
	check("merged file left")
}

// TestMergeActivityKeepsIdenticalAttempts: attempts made in the same clock
// tick by one server are identical lines (a client's empty saves, refused
// again and again); the merge took them for lines it already had and kept
// one. Each is kept, and a merge cut short still takes none twice.
func TestMergeActivityKeepsIdenticalAttempts(t *testing.T) {
	fsys, home := newHome(t)
	at := time.Unix(1000, 0)
	name := ProcessName(at, 100)
	w := NewWriter(fsys, home, name)
	for range 3 {
		if err := w.Log(Activity{Time: at, Client: "codex", Status: "input_invalid"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	saved, err := vfs.ReadFile(fsys, activityDir(home)+"/"+name+".jsonl")
	if err != nil {
		t.Fatal(err)
	}
	exited := func(string) bool { return false }
	for _, what := range []string{"merged", "merged again after a merge cut short"} {
		if err := MergeActivity(fsys, home, exited); err != nil {
			t.Fatal(err)
		}
		if acts, err := ReadActivity(fsys, home); err != nil || len(acts) != 3 {
			t.Fatalf("%s: %d attempts, want 3: %v", what, len(acts), err)
		}
		if err := fsys.WriteFileAtomic(activityDir(home)+"/"+name+".jsonl", saved, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRemoveDrainedTornTail: a server that exited leaving a torn last line
// (no newline), or a line failing its checksum, after its last good save
// kept its spool file for ever, read again by every drain. Once its saves
// are drained the file goes, its torn bytes kept under torn/; a complete
// save past the drained end still keeps it.
func TestRemoveDrainedTornTail(t *testing.T) {
	for _, tail := range []string{"0000abcd {\"v\":1,\"id\":\"torn", "00000000 {\"v\":1,\"id\":\"bad\"}\n"} {
		fsys, home := newHome(t)
		w := NewWriter(fsys, home, ProcessName(time.Unix(1, 0), 42))
		saveNote(t, w, "kept")
		w.Close()
		path := spoolDir(home) + "/" + w.name
		b, _ := vfs.ReadFile(fsys, path)
		if err := fsys.WriteFileAtomic(path, append(b, tail...), 0o600); err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		gone := func(string) bool { return false }
		drainOnce(t, fsys, home, got, gone)
		drainOnce(t, fsys, home, got, gone)
		if len(got) != 1 {
			t.Fatalf("tail %q: drained %v", tail, got)
		}
		if names, _ := listJSONL(fsys, spoolDir(home)); len(names) != 0 {
			t.Fatalf("tail %q: spool still holds %v", tail, names)
		}
		ents, err := fsys.ReadDir(home + "/torn")
		if err != nil || len(ents) != 1 {
			t.Fatalf("tail %q: torn/ holds %v (%v)", tail, ents, err)
		}
		kept, _ := vfs.ReadFile(fsys, home+"/torn/"+ents[0].Name())
		if string(kept) != tail {
			t.Fatalf("torn/ kept %q, want %q", kept, tail)
		}
	}
}

// A writer whose store is moved aside and made again (a backup put in
// place) saves into the new store's spool, and its attempts into the new
// store's activity log: the file it had open is no longer the one its path
// leads to. With no store at the path it refuses the save (ErrNoStore).
func TestWriterFollowsTheStoreMadeAgain(t *testing.T) {
	fsys, home := newHome(t)
	w := NewWriter(fsys, home, ProcessName(time.Unix(1, 0), 42))
	defer w.Close()
	now := time.Unix(100, 0)
	save := func(content string) error {
		if err := w.Log(Activity{Time: now, Client: "codex", Status: "saved", Detail: content}); err != nil && !errors.Is(err, ErrNoStore) {
			t.Fatal(err)
		}
		return w.Save(Save{ID: w.NextID(now), Time: now, Client: "codex", ClientName: "codex", Content: content})
	}
	if err := save("first"); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Rename(home, home+".bak"); err != nil {
		t.Fatal(err)
	}
	if err := save("no store"); !errors.Is(err, ErrNoStore) {
		t.Fatalf("a save with no store: %v", err)
	}
	makeStore(t, fsys, home)
	if err := save("second"); err != nil {
		t.Fatal(err)
	}
	for h, want := range map[string]string{home: "second", home + ".bak": "first"} {
		pending, _, err := ReadPending(fsys, h, Progress{})
		if err != nil || len(pending) != 1 || pending[0].Save.Content != want {
			t.Errorf("%s: pending %+v, %v; want only %q", h, pending, err, want)
		}
		acts, err := ReadActivity(fsys, h)
		if err != nil || len(acts) != 1 || acts[0].Detail != want {
			t.Errorf("%s: activity %+v, %v; want only %q", h, acts, err, want)
		}
	}
}

// saveWithStatTrouble saves "first", then saves "second" with fail
// answering every Stat (of the spool file, by path or open file, and of
// the store's marker) made after the spool file's sync, until Save
// returns. It returns Save's error and how many times the spool holds
// "second".
func saveWithStatTrouble(t *testing.T, fail func(path string) error) (error, int) {
	t.Helper()
	fsys, home := newHome(t)
	w := NewWriter(fsys, home, ProcessName(time.Unix(1, 0), 42))
	defer w.Close()
	now := time.Unix(100, 0)
	if err := w.Save(Save{ID: w.NextID(now), Time: now, Client: "codex", ClientName: "codex", Content: "first"}); err != nil {
		t.Fatal(err)
	}
	synced := false
	fsys.SetHook(func(op vfs.Op, path string) error {
		switch {
		case op == vfs.OpSync && strings.HasSuffix(path, w.name):
			synced = true
		case op == vfs.OpStat && synced:
			return fail(path)
		}
		return nil
	})
	err := w.Save(Save{ID: w.NextID(now), Time: now, Client: "codex", ClientName: "codex", Content: "second"})
	fsys.SetHook(nil)
	return err, pendingTimes(t, fsys, "second", home)
}

// A stat of the spool path that fails once, after the save is synced, for
// a reason other than the file being gone (EIO, ESTALE on an NFS home,
// EINTR on a FUSE one), is no answer: the save stays in the file it was
// synced into, once. It was taken for "the file lost its name", and the
// save written again into the same file: the drain, which checks ids only
// against the notes in the store before it, took both in (two notes).
func TestSaveNotWrittenTwiceIntoTheSameFile(t *testing.T) {
	failed := false
	err, n := saveWithStatTrouble(t, func(string) error {
		if failed {
			return nil
		}
		failed = true
		return syscall.EIO
	})
	if err == nil && n != 1 || err != nil && n != 0 {
		t.Fatalf("Save returned %v and the spool holds the save %d times; want once when saved (nil), never when refused", err, n)
	}
}

// The store is not at its path for a moment right after the save is
// synced (a backup script that moves ~/.rook aside and back, `mv
// ~/.rook ~/.rook.tmp && tar ... && mv ~/.rook.tmp ~/.rook`; here: every
// stat says "not there" until Save returns): the save is refused
// (ErrNoStore, inbox_unavailable: the client retries later) and cut off
// the file it was written to, which is back at its path when the drain
// comes: it came in with the drain, and with the client's retry, twice.
func TestRefusedSaveDoesNotComeInWithTheDrain(t *testing.T) {
	err, n := saveWithStatTrouble(t, func(path string) error {
		return &fs.PathError{Op: "stat", Path: filepath.Clean(path), Err: fs.ErrNotExist}
	})
	if err == nil {
		t.Skip("the save went through")
	}
	if !errors.Is(err, ErrNoStore) {
		t.Logf("Save: %v", err)
	}
	if n != 0 {
		t.Fatalf("Save returned %v (the client is told it was not saved), yet the spool holds the save %d times: the drain takes it in, and the client's retry makes it twice", err, n)
	}
}

// The store is moved aside and made again after a save is synced (a
// backup put in place), and the save cannot be cut off the file it was
// written to (the truncate fails): that file keeps the save and may be
// drained (moved back), so the save must not go into the new store's
// spool too. It was written there again: two notes once the old store came
// back.
func TestSaveNotCutOffTheMovedFileIsNotWrittenAgain(t *testing.T) {
	fsys, home := newHome(t)
	w := NewWriter(fsys, home, ProcessName(time.Unix(1, 0), 42))
	defer w.Close()
	now := time.Unix(100, 0)
	if err := w.Save(Save{ID: w.NextID(now), Time: now, Client: "codex", ClientName: "codex", Content: "first"}); err != nil {
		t.Fatal(err)
	}
	moved := false
	fsys.SetHook(func(op vfs.Op, path string) error {
		switch {
		case op == vfs.OpSync && !moved && strings.HasSuffix(path, w.name):
			// The save is synced: the store goes aside, a new one comes.
			moved = true
			fsys.SetHook(nil)
			if err := fsys.Rename(home, home+".bak"); err != nil {
				t.Error(err)
			}
			makeStore(t, fsys, home)
			fsys.SetHook(func(op vfs.Op, path string) error {
				if op == vfs.OpTruncate {
					return syscall.EIO
				}
				return nil
			})
		}
		return nil
	})
	err := w.Save(Save{ID: w.NextID(now), Time: now, Client: "codex", ClientName: "codex", Content: "second"})
	fsys.SetHook(nil)
	if !moved {
		t.Fatal("the store was not moved")
	}
	if n := pendingTimes(t, fsys, "second", home, home+".bak"); err != nil || n != 1 {
		t.Fatalf("Save returned %v and the two stores' spools hold the save %d times; want saved (nil), once", err, n)
	}
}
