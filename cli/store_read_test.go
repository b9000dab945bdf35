package cli

import (
	"bytes"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rookhq/rook/cas"
)

// `rook store put FILE` reads the file into one buffer sized from it:
// io.ReadAll grew its buffer as it read, and allocated 2.2 bytes per
// byte of a 16 MiB file.
func TestPutReadsFileIntoOneBuffer(t *testing.T) {
	const size = 16 << 20
	data := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := readObject(bytes.NewReader(data), size)
	runtime.ReadMemStats(&after)
	got = got[cas.ObjectRoom:] // the room PutInPlace lays the block out in
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read %d of %d bytes, %v", len(got), size, err)
	}
	if perByte := float64(after.TotalAlloc-before.TotalAlloc) / size; perByte > 1.1 {
		t.Fatalf("reading %d bytes allocated %.2f bytes per byte; want one buffer of the file's size", size, perByte)
	}
	// A size that is wrong (stdin: 0; a file that grew since its Stat)
	// still reads every byte.
	for _, hint := range []int64{0, 10, size + 100} {
		if got, err := readObject(bytes.NewReader(data), hint); err != nil || !bytes.Equal(got[cas.ObjectRoom:], data) {
			t.Fatalf("size %d: read %d of %d bytes, %v", hint, len(got), size, err)
		}
	}
}

// putAllocs runs `rook store put` (args after "put") with stdin and
// returns the bytes allocated per byte of a body of size bytes.
func putAllocs(t *testing.T, home string, stdin io.Reader, size int, args ...string) float64 {
	t.Helper()
	var out, errb bytes.Buffer
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	code := Main(append([]string{"--home", home, "store", "put"}, args...), stdin, &out, &errb)
	runtime.ReadMemStats(&after)
	if code != 0 {
		t.Fatalf("store put: exit %d: %s", code, errb.String())
	}
	if len(strings.TrimSpace(out.String())) != 32 {
		t.Fatalf("store put printed %q", out.String())
	}
	return float64(after.TotalAlloc-before.TotalAlloc) / float64(size)
}

func bigObjectsHome(t *testing.T) string {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	var errb bytes.Buffer
	if code := Main([]string{"--home", home, "init"}, strings.NewReader(""), io.Discard, &errb); code != 0 {
		t.Fatalf("init: exit %d: %s", code, errb.String())
	}
	return home
}

func bigRandomFile(t *testing.T, size int) string {
	t.Helper()
	data := make([]byte, size)
	rand.New(rand.NewSource(1)).Read(data)
	name := filepath.Join(t.TempDir(), "big.bin")
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// README: `rook store put` stores "bytes (or stdin)"; "a big file is held
// in memory about once". `rook store put < FILE` (stdin a regular file)
// is a big file too, read by its size (stdinSize) into one buffer, as
// `session append` reads it: read with size 0, its buffer grew by
// doubling, 3.7 bytes allocated per byte.
func TestStorePutFromStdinRedirectedFileIsHeldInMemoryAboutOnce(t *testing.T) {
	// A working directory of its own: Main's -C in a test before may
	// have left the process in one since removed.
	t.Chdir(t.TempDir())
	const size = 24 << 20
	home := bigObjectsHome(t)
	name := bigRandomFile(t, size)

	// holds: the file given as FILE is read once.
	fileAllocs := putAllocs(t, home, strings.NewReader(""), size, name)
	if fileAllocs > 1.6 {
		t.Fatalf("store put FILE allocated %.2f bytes per byte", fileAllocs)
	}

	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	home2 := bigObjectsHome(t)
	stdinAllocs := putAllocs(t, home2, f, size)
	if stdinAllocs > 1.6 {
		t.Fatalf("store put < FILE (%d MiB) allocated %.2f bytes per byte (store put FILE: %.2f); want the file held about once, as with FILE",
			size>>20, stdinAllocs, fileAllocs)
	}
}

// `rook store put < FILE` of a file larger than an object can be is
// refused by its size, as `store put FILE` is, before a byte of it is
// read (the file here is sparse: it takes no disk).
func TestStorePutFromStdinRedirectedFileTooBigIsRefusedUnread(t *testing.T) {
	t.Chdir(t.TempDir())
	home := bigObjectsHome(t)
	name := filepath.Join(t.TempDir(), "huge.bin")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(cas.MaxObjectSize + 1); err != nil {
		t.Skipf("no sparse file here: %v", err)
	}
	var errb bytes.Buffer
	code := Main([]string{"--home", home, "store", "put"}, f, io.Discard, &errb)
	if code == 0 || !strings.Contains(errb.String(), "standard input (") || !strings.Contains(errb.String(), "is larger than an object can be") {
		t.Fatalf("store put < a file over the limit: exit %d: %s", code, errb.String())
	}
	if at, err := f.Seek(0, io.SeekCurrent); err != nil || at != 0 {
		t.Fatalf("store put read %d bytes of stdin before refusing it (%v)", at, err)
	}
}
