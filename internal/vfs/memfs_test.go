package vfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"sync"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// create makes name with data, optionally fsyncing the file and its
// directory.
func create(t *testing.T, fsys vfs.FS, name string, data string, syncFile, syncDir bool) {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if syncFile {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if syncDir {
		if err := fsys.SyncDir(path.Dir(name)); err != nil {
			t.Fatal(err)
		}
	}
}

// contents returns name's contents, or "<absent>" if it does not exist.
func contents(t *testing.T, fsys vfs.FS, name string) string {
	t.Helper()
	b, err := vfs.ReadFile(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return "<absent>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("got error %v, want one matching %v", err, target)
	}
}

func TestMemFileRoundTrip(t *testing.T) {
	m := vfs.NewMem()
	mustNil(t, m.MkdirAll("/store/segments", 0o755))

	_, err := m.OpenFile("/store/missing/x", os.O_WRONLY|os.O_CREATE, 0o644)
	wantErr(t, err, fs.ErrNotExist)
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		t.Fatalf("error %T is not an *fs.PathError", err)
	}
	_, err = m.OpenFile("/store/segments/none", os.O_RDONLY, 0)
	wantErr(t, err, fs.ErrNotExist)

	name := "/store/segments/000001.seg"
	f, err := m.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	mustNil(t, err)
	if f.Name() != name {
		t.Fatalf("Name() = %q", f.Name())
	}
	for _, s := range []string{"hello ", "world"} {
		if n, err := f.Write([]byte(s)); err != nil || n != len(s) {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	_, err = f.Seek(0, io.SeekStart)
	mustNil(t, err)
	if b, err := io.ReadAll(f); err != nil || string(b) != "hello world" {
		t.Fatalf("ReadAll = %q, %v", b, err)
	}
	buf := make([]byte, 5)
	if n, err := f.ReadAt(buf, 6); err != nil || string(buf[:n]) != "world" {
		t.Fatalf("ReadAt = %q, %v", buf[:n], err)
	}
	buf = make([]byte, 10)
	if n, err := f.ReadAt(buf, 6); err != io.EOF || string(buf[:n]) != "world" {
		t.Fatalf("ReadAt past end = %q, %v", buf[:n], err)
	}
	fi, err := f.Stat()
	mustNil(t, err)
	if fi.Name() != "000001.seg" || fi.Size() != 11 || fi.Mode() != 0o644 || fi.IsDir() {
		t.Fatalf("Stat = %s %d %v %v", fi.Name(), fi.Size(), fi.Mode(), fi.IsDir())
	}

	// Truncate shrinks, then extends with zeros (not the old bytes).
	mustNil(t, f.Truncate(5))
	mustNil(t, f.Truncate(7))
	if got := contents(t, m, name); got != "hello\x00\x00" {
		t.Fatalf("after Truncate: %q", got)
	}
	// Writing past the end leaves a zero-filled gap.
	_, err = f.Seek(9, io.SeekStart)
	mustNil(t, err)
	_, err = f.Write([]byte("!"))
	mustNil(t, err)
	if got := contents(t, m, name); got != "hello\x00\x00\x00\x00!" {
		t.Fatalf("after gap write: %q", got)
	}
	if off, err := f.Seek(-1, io.SeekEnd); err != nil || off != 9 {
		t.Fatalf("Seek end = %d, %v", off, err)
	}
	_, err = f.Seek(-100, io.SeekCurrent)
	if err == nil {
		t.Fatal("Seek to negative offset succeeded")
	}
	mustNil(t, f.Close())
	wantErr(t, f.Close(), fs.ErrClosed)
	_, err = f.Write([]byte("x"))
	wantErr(t, err, fs.ErrClosed)

	_, err = m.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	wantErr(t, err, fs.ErrExist)

	// Relative and unclean paths name the same file.
	if got := contents(t, m, "store/./segments/../segments/000001.seg"); got != "hello\x00\x00\x00\x00!" {
		t.Fatalf("relative path read %q", got)
	}

	// O_APPEND writes at the end whatever the offset.
	f, err = m.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	mustNil(t, err)
	_, err = f.Seek(0, io.SeekStart)
	mustNil(t, err)
	_, err = f.Write([]byte("?"))
	mustNil(t, err)
	mustNil(t, f.Close())
	if got := contents(t, m, name); got != "hello\x00\x00\x00\x00!?" {
		t.Fatalf("after append: %q", got)
	}

	// A read-only handle cannot write; a write-only one cannot read.
	f, err = m.OpenFile(name, os.O_RDONLY, 0)
	mustNil(t, err)
	if _, err := f.Write([]byte("x")); err == nil {
		t.Fatal("Write on read-only handle succeeded")
	}
	mustNil(t, f.Close())

	// O_TRUNC empties.
	f, err = m.OpenFile(name, os.O_WRONLY|os.O_TRUNC, 0)
	mustNil(t, err)
	if _, err := f.Read(make([]byte, 1)); err == nil {
		t.Fatal("Read on write-only handle succeeded")
	}
	mustNil(t, f.Close())
	if got := contents(t, m, name); got != "" {
		t.Fatalf("after O_TRUNC: %q", got)
	}

	// ReadDir sorts and its entries describe themselves.
	for _, n := range []string{"c", "a", "b"} {
		create(t, m, "/store/segments/"+n, n+n, false, false)
	}
	mustNil(t, m.MkdirAll("/store/segments/d", 0o700))
	ents, err := m.ReadDir("/store/segments")
	mustNil(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
		info, err := e.Info()
		mustNil(t, err)
		if info.Name() != e.Name() || info.IsDir() != e.IsDir() || e.IsDir() != (e.Name() == "d") {
			t.Fatalf("entry %s: info %s dir=%v", e.Name(), info.Name(), info.IsDir())
		}
		if e.Name() == "a" && info.Size() != 2 {
			t.Fatalf("a has size %d", info.Size())
		}
		if e.IsDir() && info.Mode() != fs.ModeDir|0o700 {
			t.Fatalf("dir mode %v", info.Mode())
		}
	}
	if want := []string{"000001.seg", "a", "b", "c", "d"}; !slices.Equal(names, want) {
		t.Fatalf("ReadDir = %v, want %v", names, want)
	}
	_, err = m.ReadDir("/store/segments/a")
	if err == nil {
		t.Fatal("ReadDir of a file succeeded")
	}

	fi, err = m.Stat("/store")
	mustNil(t, err)
	if !fi.IsDir() || fi.Mode()&fs.ModeDir == 0 || fi.Name() != "store" {
		t.Fatalf("Stat dir = %v %v", fi.Mode(), fi.Name())
	}
	mustNil(t, m.Chmod("/store/segments/a", 0o600))
	fi, err = m.Stat("/store/segments/a")
	mustNil(t, err)
	if fi.Mode() != 0o600 {
		t.Fatalf("mode after Chmod = %v", fi.Mode())
	}

	// Rename replaces; Remove removes files and only empty directories.
	mustNil(t, m.Rename("/store/segments/a", "/store/segments/b"))
	if got := contents(t, m, "/store/segments/b"); got != "aa" {
		t.Fatalf("renamed content %q", got)
	}
	wantErr(t, m.Rename("/store/segments/a", "/store/segments/x"), fs.ErrNotExist)
	if m.Rename("/store/segments/b", "/store/segments/d") == nil {
		t.Fatal("renaming a file over a directory succeeded")
	}
	wantErr(t, m.Remove("/store/segments"), fs.ErrExist) // ENOTEMPTY, as on Linux
	wantErr(t, m.Remove("/store/segments/a"), fs.ErrNotExist)
	mustNil(t, m.Remove("/store/segments/b"))
	mustNil(t, m.Remove("/store/segments/d"))
	_, err = m.Stat("/store/segments/b")
	wantErr(t, err, fs.ErrNotExist)
	if vfs.Exists(m, "/store/segments/b") || !vfs.Exists(m, "/store/segments/c") {
		t.Fatal("Exists is wrong")
	}
	if m.MkdirAll("/store/segments/c/sub", 0o755) == nil {
		t.Fatal("MkdirAll through a file succeeded")
	}
	_, err = m.OpenFile("/store/segments/c/sub", os.O_WRONLY|os.O_CREATE, 0o644)
	if err == nil {
		t.Fatal("creating a file under a file succeeded")
	}
	mustNil(t, m.MkdirAll("/store/segments", 0o755)) // existing: fine

	// Empty directories can be renamed.
	mustNil(t, m.MkdirAll("/store/tmpdir", 0o755))
	mustNil(t, m.Rename("/store/tmpdir", "/store/newdir"))
	if fi, err := m.Stat("/store/newdir"); err != nil || !fi.IsDir() {
		t.Fatalf("renamed dir: %v, %v", fi, err)
	}
}

func TestMemUnsyncedDataLostOnCrash(t *testing.T) {
	m := vfs.NewMem()
	mustNil(t, m.MkdirAll("/d", 0o755))
	f, err := m.OpenFile("/d/f", os.O_RDWR|os.O_CREATE, 0o644)
	mustNil(t, err)
	mustNil(t, m.SyncDir("/d"))

	_, err = f.Write([]byte("abc"))
	mustNil(t, err)
	if got := contents(t, m.CrashClone(), "/d/f"); got != "" {
		t.Fatalf("never-synced file survived with %q, want empty", got)
	}
	mustNil(t, f.Sync())
	if got := contents(t, m.CrashClone(), "/d/f"); got != "abc" {
		t.Fatalf("synced file: %q", got)
	}
	_, err = f.Write([]byte("def"))
	mustNil(t, err)
	if got := contents(t, m.CrashClone(), "/d/f"); got != "abc" {
		t.Fatalf("unsynced append survived: %q", got)
	}
	if got := contents(t, m, "/d/f"); got != "abcdef" {
		t.Fatalf("live file: %q", got)
	}
	mustNil(t, f.Truncate(1))
	if got := contents(t, m.CrashClone(), "/d/f"); got != "abc" {
		t.Fatalf("unsynced truncate survived: %q", got)
	}
	mustNil(t, f.Sync())
	if got := contents(t, m.CrashClone(), "/d/f"); got != "a" {
		t.Fatalf("synced truncate: %q", got)
	}

	// The clone is independent of the original, both ways.
	c := m.CrashClone()
	create(t, c, "/d/f", "clone", false, false)
	if got := contents(t, m, "/d/f"); got != "a" {
		t.Fatalf("writing the clone changed the original: %q", got)
	}
	_, err = f.Write([]byte("zz"))
	mustNil(t, err)
	if got := contents(t, c, "/d/f"); got != "clone" {
		t.Fatalf("writing the original changed the clone: %q", got)
	}
	mustNil(t, f.Close())
}

func TestMemUnsyncedEntriesLostOnCrash(t *testing.T) {
	m := vfs.NewMem()
	mustNil(t, m.MkdirAll("/d/sub", 0o755))

	// Directories are durable at once.
	if fi, err := m.CrashClone().Stat("/d/sub"); err != nil || !fi.IsDir() {
		t.Fatalf("MkdirAll'd dir lost: %v", err)
	}

	create(t, m, "/d/new", "data", true, false)
	if got := contents(t, m.CrashClone(), "/d/new"); got != "<absent>" {
		t.Fatalf("file created without SyncDir survived: %q", got)
	}
	mustNil(t, m.SyncDir("/d"))
	if got := contents(t, m.CrashClone(), "/d/new"); got != "data" {
		t.Fatalf("file after SyncDir: %q", got)
	}

	mustNil(t, m.Remove("/d/new"))
	if got := contents(t, m.CrashClone(), "/d/new"); got != "data" {
		t.Fatalf("remove without SyncDir was durable: %q", got)
	}
	mustNil(t, m.SyncDir("/d"))
	if got := contents(t, m.CrashClone(), "/d/new"); got != "<absent>" {
		t.Fatalf("removed file came back after SyncDir: %q", got)
	}

	// Syncing one directory says nothing about another.
	create(t, m, "/d/sub/x", "x", true, false)
	mustNil(t, m.SyncDir("/d"))
	if got := contents(t, m.CrashClone(), "/d/sub/x"); got != "<absent>" {
		t.Fatalf("SyncDir of the parent made a child's entry durable: %q", got)
	}

	// fsync on a directory opened read-only is SyncDir, as on Linux.
	d, err := m.OpenFile("/d/sub", os.O_RDONLY, 0)
	mustNil(t, err)
	if _, err := d.Read(make([]byte, 1)); err == nil {
		t.Fatal("Read of a directory succeeded")
	}
	mustNil(t, d.Sync())
	mustNil(t, d.Close())
	if got := contents(t, m.CrashClone(), "/d/sub/x"); got != "x" {
		t.Fatalf("directory fsync: %q", got)
	}
	if _, err := m.OpenFile("/d/sub", os.O_WRONLY, 0); err == nil {
		t.Fatal("opening a directory for writing succeeded")
	}
}

func TestMemRenameDurableOnlyAfterSyncDir(t *testing.T) {
	m := vfs.NewMem()
	mustNil(t, m.MkdirAll("/d", 0o755))
	create(t, m, "/d/a", "A", true, true)

	mustNil(t, m.Rename("/d/a", "/d/b"))
	c := m.CrashClone()
	if a, b := contents(t, c, "/d/a"), contents(t, c, "/d/b"); a != "A" || b != "<absent>" {
		t.Fatalf("unsynced rename: a=%q b=%q", a, b)
	}
	mustNil(t, m.SyncDir("/d"))
	c = m.CrashClone()
	if a, b := contents(t, c, "/d/a"), contents(t, c, "/d/b"); a != "<absent>" || b != "A" {
		t.Fatalf("synced rename: a=%q b=%q", a, b)
	}

	// Replacing a durable file: the old one is back after a crash.
	create(t, m, "/d/tmp", "B", true, false)
	mustNil(t, m.Rename("/d/tmp", "/d/b"))
	if got := contents(t, m, "/d/b"); got != "B" {
		t.Fatalf("live rename: %q", got)
	}
	c = m.CrashClone()
	if b, tmp := contents(t, c, "/d/b"), contents(t, c, "/d/tmp"); b != "A" || tmp != "<absent>" {
		t.Fatalf("unsynced replace: b=%q tmp=%q", b, tmp)
	}
	mustNil(t, m.SyncDir("/d"))
	if got := contents(t, m.CrashClone(), "/d/b"); got != "B" {
		t.Fatalf("synced replace: %q", got)
	}
}

// TestMemWriteFileAtomicCrashSweep crashes WriteFileAtomic at every write
// operation and checks that each crash, strict or random, leaves the old
// contents or the new, never anything else.
func TestMemWriteFileAtomicCrashSweep(t *testing.T) {
	for _, old := range []string{"<absent>", "old contents"} {
		t.Run(old, func(t *testing.T) {
			const name, newData = "/store/CURRENT", "new contents, longer than the old"
			setup := func() *vfs.MemFS {
				m := vfs.NewMem()
				mustNil(t, m.MkdirAll("/store", 0o755))
				if old != "<absent>" {
					mustNil(t, m.WriteFileAtomic(name, []byte(old), 0o644))
				}
				return m
			}
			check := func(k int, what string, fsys vfs.FS) {
				t.Helper()
				if got := contents(t, fsys, name); got != old && got != newData {
					t.Fatalf("k=%d %s: CURRENT = %q, want %q or %q", k, what, got, old, newData)
				}
			}

			atomicCrashSweep(t, setup, func(m *vfs.MemFS) error { return m.WriteFileAtomic(name, []byte(newData), 0o644) }, check,
				func(m *vfs.MemFS) {
					if got := contents(t, m, name); got != newData {
						t.Fatalf("uncrashed run left %q", got)
					}
				})
		})
	}
}

// TestMemWriteFilesAtomicCrashSweep crashes a batch of two files, one
// replaced and one new, at every write operation: each file is left old or
// new (the new one absent or whole), whatever the other became.
func TestMemWriteFilesAtomicCrashSweep(t *testing.T) {
	const dir = "/store/events"
	batch := []vfs.NamedData{{Name: "a.meta", Data: []byte("new a, longer than the old")}, {Name: "b.meta", Data: []byte("new b")}}
	setup := func() *vfs.MemFS {
		m := vfs.NewMem()
		mustNil(t, m.MkdirAll(dir, 0o755))
		mustNil(t, m.WriteFileAtomic(dir+"/a.meta", []byte("old a"), 0o644))
		return m
	}
	check := func(k int, what string, fsys vfs.FS) {
		t.Helper()
		if got := contents(t, fsys, dir+"/a.meta"); got != "old a" && got != "new a, longer than the old" {
			t.Fatalf("k=%d %s: a.meta = %q", k, what, got)
		}
		if vfs.Exists(fsys, dir+"/b.meta") {
			if got := contents(t, fsys, dir+"/b.meta"); got != "new b" {
				t.Fatalf("k=%d %s: b.meta = %q", k, what, got)
			}
		}
	}
	atomicCrashSweep(t, setup, func(m *vfs.MemFS) error { return m.WriteFilesAtomic(dir, batch, 0o644) }, check,
		func(m *vfs.MemFS) {
			for _, f := range batch {
				if got := contents(t, m, dir+"/"+f.Name); got != string(f.Data) {
					t.Fatalf("uncrashed run left %s = %q", f.Name, got)
				}
			}
		})
}

// atomicCrashSweep crashes write at each of its write operations in turn,
// on a fresh filesystem from setup, and checks the strict crash state and
// 50 random ones; done checks the run that did not crash. A clone is a live
// filesystem: write runs on it again, as a reopened store would.
func atomicCrashSweep(t *testing.T, setup func() *vfs.MemFS, write func(*vfs.MemFS) error, check func(k int, what string, fsys vfs.FS), done func(*vfs.MemFS)) {
	t.Helper()
	// An uninjected run says how many write ops the sweep covers.
	m := setup()
	before := m.WriteOps()
	mustNil(t, write(m))
	total := m.WriteOps() - before
	for k := 0; ; k++ {
		if k > total {
			t.Fatalf("still crashing at k=%d, past the %d write ops of a clean run", k, total)
		}
		m := setup()
		crashed := false
		m.CrashAt(k, func(clone *vfs.MemFS) {
			crashed = true
			check(k, "CrashClone", clone)
			for seed := range uint64(50) {
				check(k, fmt.Sprint("seed ", seed), m.CrashCloneRandom(rand.New(rand.NewPCG(seed, 0))))
			}
			mustNil(t, write(clone))
		})
		err := write(m)
		if !crashed {
			mustNil(t, err)
			done(m)
			if k != total {
				t.Fatalf("sweep ended at k=%d, want %d", k, total)
			}
			return
		}
		wantErr(t, err, vfs.ErrInjected)
	}
}

func TestMemHookSeesEveryOp(t *testing.T) {
	m := vfs.NewMem()
	type call struct {
		op   vfs.Op
		path string
	}
	var mu sync.Mutex
	var calls []call
	m.SetHook(func(op vfs.Op, p string) error {
		mu.Lock()
		calls = append(calls, call{op, p})
		mu.Unlock()
		m.CrashClone() // allowed: the hook runs without m's lock
		return nil
	})
	mustNil(t, m.MkdirAll("/d", 0o755))
	mustNil(t, m.WriteFileAtomic("/d/f", []byte("x"), 0o644))
	_, err := vfs.ReadFile(m, "/d/f")
	mustNil(t, err)
	mustNil(t, m.Chmod("/d/f", 0o600))
	_, err = m.ReadDir("/d")
	mustNil(t, err)
	l, err := m.TryLock("/d/LOCK", 0o644)
	mustNil(t, err)
	mustNil(t, l.Unlock())
	mustNil(t, m.Remove("/d/f"))
	m.SetHook(nil)

	want := []call{
		{vfs.OpMkdir, "/d"},
		{vfs.OpStat, "/d/f"},
		{vfs.OpOpen, "/d/.f.tmp0"},
		{vfs.OpWrite, "/d/.f.tmp0"},
		{vfs.OpSync, "/d/.f.tmp0"},
		{vfs.OpRename, "/d/f"},
		{vfs.OpSyncDir, "/d"},
		{vfs.OpOpenRead, "/d/f"},
		{vfs.OpStat, "/d/f"}, // ReadFile sizes its buffer
		{vfs.OpRead, "/d/f"},
		{vfs.OpRead, "/d/f"},
		{vfs.OpChmod, "/d/f"},
		{vfs.OpReadDir, "/d"},
		{vfs.OpLock, "/d/LOCK"},
		{vfs.OpRemove, "/d/f"},
	}
	// ReadFile may read more than twice; collapse repeated reads.
	calls = slices.CompactFunc(calls, func(a, b call) bool { return a == b && a.op == vfs.OpRead })
	want = slices.CompactFunc(want, func(a, b call) bool { return a == b && a.op == vfs.OpRead })
	if !slices.Equal(calls, want) {
		t.Fatalf("hook saw\n%v\nwant\n%v", calls, want)
	}
	writes := 0
	for _, c := range want {
		if c.op.IsWrite() {
			writes++
		}
	}
	if got := m.WriteOps(); got != writes {
		t.Fatalf("WriteOps = %d, want %d", got, writes)
	}
	if vfs.OpRead.IsWrite() || vfs.OpOpenRead.IsWrite() || vfs.OpStat.IsWrite() || !vfs.OpSyncDir.IsWrite() {
		t.Fatal("IsWrite misclassifies")
	}
	if vfs.OpSyncDir.String() != "syncdir" || vfs.Op(99).String() != "Op(99)" {
		t.Fatal("Op.String is wrong")
	}
}

// TestMemHookErrorStopsOp fails one kind of operation at a time and checks
// that the error comes back and nothing changed.
func TestMemHookErrorStopsOp(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		op    vfs.Op
		do    func(m *vfs.MemFS, f vfs.File) error
		check func(t *testing.T, m *vfs.MemFS) // runs with the hook removed
	}{
		{vfs.OpOpen, func(m *vfs.MemFS, _ vfs.File) error {
			_, err := m.OpenFile("/d/new", os.O_WRONLY|os.O_CREATE, 0o644)
			return err
		}, func(t *testing.T, m *vfs.MemFS) {
			if vfs.Exists(m, "/d/new") {
				t.Error("file created")
			}
		}},
		{vfs.OpWrite, func(_ *vfs.MemFS, f vfs.File) error {
			n, err := f.Write([]byte("more"))
			if n != 0 {
				t.Errorf("Write returned n=%d", n)
			}
			return err
		}, func(t *testing.T, m *vfs.MemFS) {
			if got := contents(t, m, "/d/f"); got != "data" {
				t.Errorf("contents %q", got)
			}
		}},
		{vfs.OpTruncate, func(_ *vfs.MemFS, f vfs.File) error { return f.Truncate(0) },
			func(t *testing.T, m *vfs.MemFS) {
				if got := contents(t, m, "/d/f"); got != "data" {
					t.Errorf("contents %q", got)
				}
			}},
		{vfs.OpSync, func(_ *vfs.MemFS, f vfs.File) error { return f.Sync() },
			func(t *testing.T, m *vfs.MemFS) {
				if got := contents(t, m.CrashClone(), "/d/f"); got != "" {
					t.Errorf("failed Sync made %q durable", got)
				}
			}},
		{vfs.OpSyncDir, func(m *vfs.MemFS, _ vfs.File) error {
			g, err := m.OpenFile("/d/g", os.O_WRONLY|os.O_CREATE, 0o644)
			if err != nil {
				return err
			}
			g.Close()
			return m.SyncDir("/d")
		}, func(t *testing.T, m *vfs.MemFS) {
			if vfs.Exists(m.CrashClone(), "/d/g") {
				t.Error("failed SyncDir made the entry durable")
			}
		}},
		{vfs.OpRename, func(m *vfs.MemFS, _ vfs.File) error { return m.Rename("/d/f", "/d/g") },
			func(t *testing.T, m *vfs.MemFS) {
				if !vfs.Exists(m, "/d/f") || vfs.Exists(m, "/d/g") {
					t.Error("renamed")
				}
			}},
		{vfs.OpRemove, func(m *vfs.MemFS, _ vfs.File) error { return m.Remove("/d/f") },
			func(t *testing.T, m *vfs.MemFS) {
				if !vfs.Exists(m, "/d/f") {
					t.Error("removed")
				}
			}},
		{vfs.OpMkdir, func(m *vfs.MemFS, _ vfs.File) error { return m.MkdirAll("/d/e", 0o755) },
			func(t *testing.T, m *vfs.MemFS) {
				if vfs.Exists(m, "/d/e") {
					t.Error("created")
				}
			}},
		{vfs.OpChmod, func(m *vfs.MemFS, _ vfs.File) error { return m.Chmod("/d/f", 0o600) },
			func(t *testing.T, m *vfs.MemFS) {
				if fi, _ := m.Stat("/d/f"); fi.Mode() != 0o644 {
					t.Errorf("mode %v", fi.Mode())
				}
			}},
		{vfs.OpLock, func(m *vfs.MemFS, _ vfs.File) error { _, err := m.TryLock("/d/LOCK", 0o644); return err },
			func(t *testing.T, m *vfs.MemFS) {
				if vfs.Exists(m, "/d/LOCK") {
					t.Error("lock file created")
				}
				l, err := m.TryLock("/d/LOCK", 0o644)
				mustNil(t, err)
				mustNil(t, l.Unlock())
			}},
		{vfs.OpRead, func(_ *vfs.MemFS, f vfs.File) error { _, err := f.ReadAt(make([]byte, 4), 0); return err }, nil},
		{vfs.OpOpenRead, func(m *vfs.MemFS, _ vfs.File) error { _, err := vfs.ReadFile(m, "/d/f"); return err }, nil},
		{vfs.OpStat, func(m *vfs.MemFS, _ vfs.File) error { _, err := m.Stat("/d/f"); return err }, nil},
		{vfs.OpReadDir, func(m *vfs.MemFS, _ vfs.File) error { _, err := m.ReadDir("/d"); return err }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.op.String(), func(t *testing.T) {
			m := vfs.NewMem()
			mustNil(t, m.MkdirAll("/d", 0o755))
			f, err := m.OpenFile("/d/f", os.O_RDWR|os.O_CREATE, 0o644)
			mustNil(t, err)
			mustNil(t, m.SyncDir("/d"))
			_, err = f.Write([]byte("data"))
			mustNil(t, err)
			m.SetHook(func(op vfs.Op, _ string) error {
				if op == tt.op {
					return errBoom
				}
				return nil
			})
			wantErr(t, tt.do(m, f), errBoom)
			m.SetHook(nil)
			if tt.check != nil {
				tt.check(t, m)
			}
		})
	}
}

func TestMemCrashAtKillsEverything(t *testing.T) {
	m := vfs.NewMem()
	mustNil(t, m.MkdirAll("/d", 0o755))
	create(t, m, "/d/f", "data", true, true)
	var clone *vfs.MemFS
	m.CrashAt(0, func(c *vfs.MemFS) { clone = c })
	wantErr(t, m.Remove("/d/f"), vfs.ErrInjected)
	if clone == nil {
		t.Fatal("onCrash not called")
	}
	ops := m.WriteOps()
	_, err := vfs.ReadFile(m, "/d/f")
	wantErr(t, err, vfs.ErrInjected)
	_, err = m.Stat("/d/f")
	wantErr(t, err, vfs.ErrInjected)
	wantErr(t, m.SyncDir("/d"), vfs.ErrInjected)
	m.SetHook(nil) // death is permanent
	wantErr(t, m.MkdirAll("/e", 0o755), vfs.ErrInjected)
	if m.WriteOps() != ops {
		t.Fatal("a dead filesystem counted write ops")
	}
	if got := contents(t, clone, "/d/f"); got != "data" {
		t.Fatalf("clone holds %q", got)
	}
}

func TestMemTryLock(t *testing.T) {
	m := vfs.NewMem()
	mustNil(t, m.MkdirAll("/store", 0o755))
	l, err := m.TryLock("/store/LOCK", 0o644)
	mustNil(t, err)
	if _, err := m.TryLock("/store/LOCK", 0o644); err != vfs.ErrLocked {
		t.Fatalf("second TryLock: %v, want ErrLocked", err)
	}
	if _, err := m.TryLock("store/./LOCK", 0o644); err != vfs.ErrLocked {
		t.Fatalf("TryLock via another spelling: %v, want ErrLocked", err)
	}
	_, err = l.File().Write([]byte("pid 1"))
	mustNil(t, err)
	if got := contents(t, m, "/store/LOCK"); got != "pid 1" {
		t.Fatalf("lock file holds %q", got)
	}

	// A crash releases locks: the clone does not inherit them.
	cl, err := m.CrashClone().TryLock("/store/LOCK", 0o644)
	mustNil(t, err)
	mustNil(t, cl.Unlock())

	mustNil(t, l.Unlock())
	if l.Unlock() == nil {
		t.Fatal("second Unlock succeeded")
	}
	l, err = m.TryLock("/store/LOCK", 0o644)
	mustNil(t, err)
	mustNil(t, l.Unlock())

	_, err = m.TryLock("/nodir/LOCK", 0o644)
	wantErr(t, err, fs.ErrNotExist)
}

// TestMemConcurrentReadAtWrite is for the race detector: readers use ReadAt
// on the writer's own handle and on another one while it appends and syncs.
func TestMemConcurrentReadAtWrite(t *testing.T) {
	m := vfs.NewMem()
	w, err := m.OpenFile("/log", os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	mustNil(t, err)
	r, err := m.OpenFile("/log", os.O_RDONLY, 0)
	mustNil(t, err)

	const chunk, chunks = 16, 500
	// Chunk i is chunk copies of byte i, so any byte read is checkable.
	var wg sync.WaitGroup
	for _, h := range []vfs.File{w, r, r} {
		wg.Go(func() {
			buf := make([]byte, 40)
			for i := range 2000 {
				off := int64(i * 7 % (chunk * chunks))
				n, _ := h.ReadAt(buf, off)
				for j, b := range buf[:n] {
					if want := byte((off + int64(j)) / chunk); b != want {
						t.Errorf("byte at %d = %d, want %d", off+int64(j), b, want)
						return
					}
				}
			}
		})
	}
	wg.Go(func() {
		for range 100 {
			m.CrashClone()
			if _, err := m.Stat("/log"); err != nil {
				t.Error(err)
			}
		}
	})
	for i := range chunks {
		if _, err := w.Write(bytes.Repeat([]byte{byte(i)}, chunk)); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			mustNil(t, w.Sync())
		}
	}
	wg.Wait()
	mustNil(t, w.Close())
	mustNil(t, r.Close())
}

// dump returns every file in fsys with its contents.
func dump(t *testing.T, fsys vfs.FS) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(dir string)
	walk = func(dir string) {
		ents, err := fsys.ReadDir(dir)
		mustNil(t, err)
		for _, e := range ents {
			p := path.Join(dir, e.Name())
			if e.IsDir() {
				walk(p)
			} else {
				out[p] = contents(t, fsys, p)
			}
		}
	}
	walk("/")
	return out
}

// TestMemCrashCloneRandomPossibleStates checks that random crash clones only
// produce states the model allows, and that they do produce each kind.
func TestMemCrashCloneRandomPossibleStates(t *testing.T) {
	m := vfs.NewMem()
	mustNil(t, m.MkdirAll("/d", 0o755))
	mustNil(t, m.MkdirAll("/e", 0o755))

	// Append-only files with durable entries, written and synced at random.
	type model struct {
		f             vfs.File
		cur, synced   []byte
		seenSynced    bool // clone had exactly the synced contents (when different)
		seenAll       bool
		seenPartial   bool
		seenGarbled   bool
		seenDifferent bool // cur != synced at some check
	}
	files := make([]*model, 4)
	for i := range files {
		f, err := m.OpenFile(fmt.Sprintf("/d/f%d", i), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		mustNil(t, err)
		files[i] = &model{f: f}
	}
	mustNil(t, m.SyncDir("/d"))

	// Directory changes, each pending at crash time. Make every starting
	// file durable first: a later SyncDir would make earlier changes durable.
	for _, f := range []struct{ name, data string }{
		{"/d/renamed-from", "R"}, {"/d/moved", "M"}, {"/d/target", "T1"},
		{"/d/removed", "X"}, {"/d/rewritten", "old!"},
	} {
		create(t, m, f.name, f.data, true, false)
	}
	mustNil(t, m.SyncDir("/d"))
	mustNil(t, m.Rename("/d/renamed-from", "/d/renamed-to"))
	mustNil(t, m.Rename("/d/moved", "/e/moved"))
	create(t, m, "/d/target.tmp", "T2", true, false)
	mustNil(t, m.Rename("/d/target.tmp", "/d/target"))
	create(t, m, "/d/created", "C", true, false)
	mustNil(t, m.Remove("/d/removed"))
	// Truncated (O_TRUNC) and rewritten since its last sync: the truncate
	// and the write reach the disk independently, the write possibly torn.
	create(t, m, "/d/rewritten", "new", false, false)

	seen := map[string]map[string]bool{}
	note := func(name, got string) {
		if seen[name] == nil {
			seen[name] = map[string]bool{}
		}
		seen[name][got] = true
	}
	wantOneOf := func(seed uint64, name, got string, allowed ...string) {
		t.Helper()
		if !slices.Contains(allowed, got) {
			t.Fatalf("seed %d: %s = %q, want one of %q", seed, name, got, allowed)
		}
		note(name, got)
	}

	rng := rand.New(rand.NewPCG(1, 2))
	seed := uint64(0)
	for round := range 300 {
		for _, fm := range files {
			if rng.IntN(2) == 0 {
				b := make([]byte, 1+rng.IntN(20))
				for i := range b {
					b[i] = byte('a' + rng.IntN(26))
				}
				_, err := fm.f.Write(b)
				mustNil(t, err)
				fm.cur = append(fm.cur, b...)
			}
			if rng.IntN(4) == 0 {
				mustNil(t, fm.f.Sync())
				fm.synced = slices.Clone(fm.cur)
			}
		}
		if round%3 != 0 {
			continue
		}
		before := dump(t, m)
		for range 5 {
			seed++
			c := m.CrashCloneRandom(rand.New(rand.NewPCG(seed, 0)))
			again := m.CrashCloneRandom(rand.New(rand.NewPCG(seed, 0)))
			got := dump(t, c)
			if fmt.Sprint(got) != fmt.Sprint(dump(t, again)) {
				t.Fatalf("seed %d: CrashCloneRandom is not deterministic", seed)
			}
			for i, fm := range files {
				name := fmt.Sprintf("/d/f%d", i)
				data, ok := got[name]
				if !ok {
					t.Fatalf("seed %d: durable %s vanished", seed, name)
				}
				d := []byte(data)
				if !bytes.HasPrefix(d, fm.synced) || len(d) > len(fm.cur) {
					t.Fatalf("seed %d: %s = %q; synced %q, current %q", seed, name, d, fm.synced, fm.cur)
				}
				if len(fm.cur) == len(fm.synced) {
					continue
				}
				fm.seenDifferent = true
				switch {
				case len(d) == len(fm.synced):
					fm.seenSynced = true
				case !bytes.HasPrefix(fm.cur, d):
					fm.seenGarbled = true
				case len(d) == len(fm.cur):
					fm.seenAll = true
				default:
					fm.seenPartial = true
				}
			}
			// A rename happened or did not; a file never has two names
			// or none.
			from, to := got["/d/renamed-from"], got["/d/renamed-to"]
			if (from == "") == (to == "") || from+to != "R" {
				t.Fatalf("seed %d: rename left from=%q to=%q", seed, from, to)
			}
			note("rename", fmt.Sprint(from != ""))
			dm, em := got["/d/moved"], got["/e/moved"]
			if (dm == "") == (em == "") || dm+em != "M" {
				t.Fatalf("seed %d: cross-dir rename left %q and %q", seed, dm, em)
			}
			note("move", fmt.Sprint(dm != ""))
			wantOneOf(seed, "target", got["/d/target"], "T1", "T2")
			if _, ok := got["/d/target.tmp"]; ok {
				t.Fatalf("seed %d: temp name resurrected", seed)
			}
			createdGot, ok := got["/d/created"]
			if !ok {
				createdGot = "<absent>"
			}
			wantOneOf(seed, "created", createdGot, "<absent>", "C")
			removedGot, ok := got["/d/removed"]
			if !ok {
				removedGot = "<absent>"
			}
			wantOneOf(seed, "removed", removedGot, "<absent>", "X")
			rw := got["/d/rewritten"]
			if len(rw) > len("old!") {
				t.Fatalf("seed %d: rewritten = %q, longer than old or new", seed, rw)
			}
			if slices.Contains(rewrittenOutcomes, rw) {
				note("rewritten", rw)
			}
		}
		if fmt.Sprint(before) != fmt.Sprint(dump(t, m)) {
			t.Fatal("CrashCloneRandom changed the original")
		}
	}

	for i, fm := range files {
		if !fm.seenDifferent {
			continue
		}
		if !fm.seenSynced || !fm.seenAll || !fm.seenPartial || !fm.seenGarbled {
			t.Errorf("f%d: saw synced=%v all=%v partial=%v garbled=%v; want every kind",
				i, fm.seenSynced, fm.seenAll, fm.seenPartial, fm.seenGarbled)
		}
	}
	for _, name := range []string{"rename", "move", "target", "created", "removed"} {
		if len(seen[name]) != 2 {
			t.Errorf("%s: saw only %v; want both outcomes", name, seen[name])
		}
	}
	// Neither, only the truncate, both, only the write (over the old bytes),
	// and a torn write.
	for _, want := range []string{"old!", "", "new", "new!", "nld!"} {
		if !seen["rewritten"][want] {
			t.Errorf("rewritten: never saw %q; saw %q", want, slices.Sorted(maps.Keys(seen["rewritten"])))
		}
	}
}

// rewrittenOutcomes are the ungarbled states of a file synced as "old!"
// then truncated to 0 and rewritten as "new": truncate lost or not, any
// prefix of the write, and if the truncate happened possibly the new size
// without all of the data.
var rewrittenOutcomes = []string{
	"old!", "nld!", "ned!", "new!",
	"", "n", "ne", "new",
	"\x00\x00\x00", "n\x00\x00", "ne\x00",
}

// TestMemCrashCloneRandomOutOfOrderWrites models a copy-on-write commit
// missing its first fsync: new nodes appended past the synced end, then a
// meta page overwritten at offset 0, with no Sync in between. A power cut
// may persist any subset of the two writes, either torn, so every
// combination must come up, including "new meta, nodes missing" in both
// its forms (file too short, and full size with the nodes' bytes zero).
func TestMemCrashCloneRandomOutOfOrderWrites(t *testing.T) {
	const page, synced, appended = 4096, 2 * 4096, 3000
	rng := rand.New(rand.NewPCG(3, 3))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(1 + rng.IntN(255)) // never 0: zeros are visible
		}
		return b
	}
	old, nodes, meta := random(synced), random(appended), random(page)

	m := vfs.NewMem()
	mustNil(t, m.MkdirAll("/d", 0o755))
	f, err := m.OpenFile("/d/index", os.O_RDWR|os.O_CREATE, 0o644)
	mustNil(t, err)
	_, err = f.Write(old)
	mustNil(t, err)
	mustNil(t, f.Sync())
	mustNil(t, m.SyncDir("/d"))
	_, err = f.Write(nodes) // appended at the end
	mustNil(t, err)
	_, err = f.Seek(0, io.SeekStart)
	mustNil(t, err)
	_, err = f.Write(meta) // overwrites page 0
	mustNil(t, err)

	if got := contents(t, m.CrashClone(), "/d/index"); got != string(old) {
		t.Fatal("CrashClone kept unsynced writes")
	}
	want := string(meta) + string(old[page:]) + string(nodes)
	if got := contents(t, m, "/d/index"); got != want {
		t.Fatal("live contents wrong")
	}

	// classify names what became of each write.
	classify := func(got, oldb, newb []byte) string {
		switch {
		case bytes.Equal(got, newb):
			return "whole"
		case bytes.Equal(got, oldb):
			return "lost"
		}
		// A torn write is a prefix of the new bytes, then the old ones.
		k := 0
		for k < len(got) && got[k] == newb[k] {
			k++
		}
		if bytes.Equal(got[k:], oldb[k:]) {
			return "torn"
		}
		return "garbled"
	}
	seen := map[[2]string]int{}
	for seed := range uint64(2000) {
		c := m.CrashCloneRandom(rand.New(rand.NewPCG(seed, 7)))
		got := []byte(contents(t, c, "/d/index"))
		again := contents(t, m.CrashCloneRandom(rand.New(rand.NewPCG(seed, 7))), "/d/index")
		if string(got) != again {
			t.Fatalf("seed %d: not deterministic", seed)
		}
		if len(got) < synced || len(got) > synced+appended {
			t.Fatalf("seed %d: size %d, want %d..%d", seed, len(got), synced, synced+appended)
		}
		// Synced bytes that no unsynced write touched are always intact.
		if !bytes.Equal(got[page:synced], old[page:]) {
			t.Fatalf("seed %d: synced bytes outside the overwritten page changed", seed)
		}
		metaState := classify(got[:page], old[:page], meta)
		tail := got[synced:]
		var nodeState string
		switch {
		case len(tail) == 0:
			nodeState = "lost"
		case bytes.Equal(tail, nodes):
			nodeState = "whole"
		case bytes.HasPrefix(nodes, tail):
			nodeState = "torn" // and the file ends there
		case len(tail) == appended && bytes.Equal(tail, make([]byte, appended)):
			nodeState = "size only" // the size reached the disk, no data
		default:
			nodeState = "partial or garbled"
		}
		seen[[2]string{metaState, nodeState}]++
		if !slices.Contains([]string{"whole", "lost", "torn", "garbled"}, metaState) {
			t.Fatalf("seed %d: meta %s", seed, metaState)
		}
	}
	t.Logf("outcomes (meta, nodes): %v", seen)
	for _, want := range [][2]string{
		{"lost", "lost"}, {"lost", "whole"}, {"whole", "lost"}, {"whole", "whole"},
		{"whole", "size only"}, {"whole", "torn"}, {"torn", "whole"}, {"torn", "lost"},
		{"garbled", "whole"}, {"lost", "partial or garbled"},
	} {
		if seen[want] == 0 {
			t.Errorf("never saw meta %s with nodes %s", want[0], want[1])
		}
	}

	// Once synced, there is nothing left to lose or tear.
	mustNil(t, f.Sync())
	for seed := range uint64(50) {
		if got := contents(t, m.CrashCloneRandom(rand.New(rand.NewPCG(seed, 7))), "/d/index"); got != want {
			t.Fatalf("seed %d: synced file changed by a crash", seed)
		}
	}
	mustNil(t, f.Close())
}

// TestMemCrashCloneRandomHolesAndTruncates: a later append can survive
// without an earlier one (the gap reads as zeros), and unsynced truncates,
// shrinking or growing, happen or not.
func TestMemCrashCloneRandomHolesAndTruncates(t *testing.T) {
	m := vfs.NewMem()
	mustNil(t, m.MkdirAll("/d", 0o755))
	create(t, m, "/d/appends", "abc", true, true)
	create(t, m, "/d/shrunk", "abcdef", true, true)
	create(t, m, "/d/grown", "ab", true, true)

	f, err := m.OpenFile("/d/appends", os.O_WRONLY|os.O_APPEND, 0)
	mustNil(t, err)
	for _, s := range []string{"XX", "YY"} {
		_, err = f.Write([]byte(s))
		mustNil(t, err)
	}
	mustNil(t, f.Close())
	for name, size := range map[string]int64{"/d/shrunk": 2, "/d/grown": 5} {
		f, err := m.OpenFile(name, os.O_WRONLY, 0)
		mustNil(t, err)
		mustNil(t, f.Truncate(size))
		mustNil(t, f.Close())
	}

	seen := map[string]map[string]bool{"/d/appends": {}, "/d/shrunk": {}, "/d/grown": {}}
	for seed := range uint64(500) {
		got := dump(t, m.CrashCloneRandom(rand.New(rand.NewPCG(seed, 1))))
		for name, allowed := range map[string][]string{
			"/d/shrunk": {"abcdef", "ab"},
			"/d/grown":  {"ab", "ab\x00\x00\x00"},
		} {
			if !slices.Contains(allowed, got[name]) {
				t.Fatalf("seed %d: %s = %q, want one of %q", seed, name, got[name], allowed)
			}
			seen[name][got[name]] = true
		}
		a := got["/d/appends"]
		if len(a) < 3 || a[:3] != "abc" || len(a) > 7 {
			t.Fatalf("seed %d: appends = %q", seed, a)
		}
		seen["/d/appends"][a] = true
	}
	for name, want := range map[string][]string{
		"/d/shrunk":  {"abcdef", "ab"},
		"/d/grown":   {"ab", "ab\x00\x00\x00"},
		"/d/appends": {"abc", "abcXX", "abcXXYY", "abc\x00\x00YY", "abcX", "abcXXY", "abc\x00\x00", "abc\x00\x00\x00\x00"},
	} {
		for _, w := range want {
			if !seen[name][w] {
				t.Errorf("%s: never saw %q; saw %q", name, w, slices.Sorted(maps.Keys(seen[name])))
			}
		}
	}
}

// A killed process's writes stay, synced or not, in a clone of its own.
func TestMemKillCloneKeepsUnsyncedChanges(t *testing.T) {
	m := vfs.NewMem()
	mustNil(t, m.MkdirAll("/d", 0o755))
	f, err := m.OpenFile("/d/f", os.O_RDWR|os.O_CREATE, 0o644)
	mustNil(t, err)
	_, err = f.Write([]byte("abc"))
	mustNil(t, err)
	c := m.KillClone()
	if got := contents(t, c, "/d/f"); got != "abc" {
		t.Fatalf("unsynced file after a kill: %q, want abc", got)
	}
	// Durable in the clone: a power cut after the kill keeps it.
	if got := contents(t, c.CrashClone(), "/d/f"); got != "abc" {
		t.Fatalf("the kill's state after a power cut: %q, want abc", got)
	}
	_, err = f.Write([]byte("def"))
	mustNil(t, err)
	if got := contents(t, c, "/d/f"); got != "abc" {
		t.Fatalf("writing the original changed the clone: %q", got)
	}
	mustNil(t, f.Close())
}
