package cas

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rookhq/rook/internal/vfs"
	"github.com/rookhq/rook/internal/vfs/vfstest"
)

// crashWorkload puts objects of several kinds and sizes through one store,
// with a Sync every few puts, and records what each returned Sync
// acknowledged. It stops at the first error (the injected crash).
func crashWorkload(fsys *vfs.MemFS, home string, acked map[Key][]byte) error {
	return crashWorkloadOf(fsys, home, acked, false)
}

// crashWorkloadOf is crashWorkload, in bulk (SetBulk) with blocks of 4 KiB
// when bulk is set: blocks are sealed and compressed in the background
// every few puts, and each object must read back before any Sync.
func crashWorkloadOf(fsys *vfs.MemFS, home string, acked map[Key][]byte, bulk bool) error {
	opts := Options{FS: fsys, Clock: testClock(), Writable: true, SegmentSize: 16 << 10}
	if bulk {
		opts.BulkBlockSize, opts.BulkPackMax = 4<<10, 8<<10
	}
	s, err := Open(home, opts)
	if err != nil {
		return err
	}
	defer s.Close()
	if bulk {
		if err := s.SetBulk(true); err != nil {
			return err
		}
	}
	// In bulk, Syncs come further apart, so that blocks are also appended
	// by the seals that follow them, not only by a Sync.
	syncEvery := 5
	if bulk {
		syncEvery = 15
	}
	pending := map[Key][]byte{}
	for i := 0; i < 60; i++ {
		var data []byte
		switch i % 4 {
		case 0:
			data = []byte(fmt.Sprintf(`{"turn":%d,"text":"a small message"}`, i))
		case 1:
			data = bytes.Repeat([]byte(fmt.Sprintf("file %d line\n", i)), 200+i)
		case 2:
			data = noise(3000+i, uint64(i))
		case 3:
			data = []byte(fmt.Sprintf("n%d", i))
		}
		if bulk && i%7 == 6 {
			data = noise(9000+i, uint64(i)) // past BulkPackMax: a block of its own
		}
		r, err := s.Put(Kind(1+i%3), data)
		if err != nil {
			return err
		}
		pending[r.ID] = data
		if bulk {
			for id, want := range pending {
				if got, err := s.Get(id); err != nil || !bytes.Equal(got, want) {
					return fmt.Errorf("object %s put and not synced does not read back: %v", Short(id), err)
				}
			}
		}
		if i%syncEvery == syncEvery-1 {
			if err := s.Sync(); err != nil {
				return err
			}
			for k, v := range pending {
				acked[k] = v
			}
			pending = map[Key][]byte{}
		}
		if i == 30 {
			// A rebuild mid-run: its own crash points are swept too.
			if _, err := s.Reindex(nil); err != nil {
				return err
			}
		}
	}
	return s.Close()
}

// checkCrashState opens what a crash left and checks the promise: the store
// opens, every acknowledged object reads back byte-exact, verify is clean.
func checkCrashState(t *testing.T, k int, clone *vfs.MemFS, home string, acked map[Key][]byte) {
	t.Helper()
	s, err := Open(home, Options{FS: clone, Clock: testClock(), Writable: true})
	if err != nil {
		t.Fatalf("crash at write %d: open: %v", k, err)
	}
	defer s.Close()
	for id, want := range acked {
		got, err := s.Get(id)
		if err != nil {
			t.Fatalf("crash at write %d: acknowledged %s: %v (notices %v)", k, Short(id), err, s.Notices)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("crash at write %d: acknowledged %s reads back different bytes", k, Short(id))
		}
	}
	rep, err := s.Verify(nil)
	if err != nil {
		t.Fatalf("crash at write %d: verify: %v", k, err)
	}
	if problems := notKeptByOpen(rep.Problems, s.Notices); len(problems) != 0 {
		t.Fatalf("crash at write %d: verify: %v (notices %v)", k, problems, s.Notices)
	}
	// And the store goes on working.
	if _, err := s.Put(KindNote, []byte("after the crash, one more object")); err != nil {
		t.Fatalf("crash at write %d: put after recovery: %v", k, err)
	}
	if err := s.Sync(); err != nil {
		t.Fatalf("crash at write %d: sync after recovery: %v", k, err)
	}
}

// notKeptByOpen drops from verify's problems the damaged regions that the
// writer's open kept, saying so (recover): a power cut that reordered
// unsynced writes can leave a damaged record with whole ones after it,
// which cannot be told from damage to records a Barrier acknowledged, so
// the open takes those records in and leaves the damaged bytes (holding no
// live object) where they are, for verify to list.
func notKeptByOpen(problems []Problem, notices []string) []Problem {
	var out []Problem
	for _, p := range problems {
		kept := false
		if p.Short == "" && strings.HasSuffix(p.Reason, "(no live object is stored there)") {
			where := fmt.Sprintf("segment %s offset %d:", p.Segment, p.Offset)
			for _, n := range notices {
				if strings.HasPrefix(n, where) && strings.Contains(n, "not a torn write") {
					kept = true
				}
			}
		}
		if !kept {
			out = append(out, p)
		}
	}
	return out
}

// crashHome is where the crash tests keep their store.
const crashHome = "/h/.rook"

func initCrashStore(fsys *vfs.MemFS) {
	if _, err := Init(fsys, nil, crashHome); err != nil {
		panic(err)
	}
}

// TestCrashSweep crashes the workload at every write operation in turn
// (write, sync, rename, create...) and reopens from only what was durable.
func TestCrashSweep(t *testing.T) {
	var acked map[Key][]byte
	n := vfstest.Sweep(t, nil, 0, initCrashStore,
		func(fsys *vfs.MemFS) error { acked = map[Key][]byte{}; return crashWorkload(fsys, crashHome, acked) },
		func(k int, states []*vfs.MemFS) { checkCrashState(t, k, states[0], crashHome, acked) })
	t.Logf("swept %d crash points", n)
}

// TestCrashSweepRandomUnsynced is the sweep again, but each crash keeps a
// random part of what was written and not synced (partial tails, garbled
// tails, some directory entries): recovery must not rely on all-or-nothing.
func TestCrashSweepRandomUnsynced(t *testing.T) {
	var acked map[Key][]byte
	vfstest.Sweep(t, rand.New(rand.NewPCG(1, 2)), crashSeeds(), initCrashStore,
		func(fsys *vfs.MemFS) error { acked = map[Key][]byte{}; return crashWorkload(fsys, crashHome, acked) },
		func(k int, states []*vfs.MemFS) {
			for _, c := range states[1:] {
				checkCrashState(t, k, c, crashHome, acked)
			}
		})
}

// TestBulkCrashSweep is the sweep of bulk writes (an import, a repack):
// blocks sealed and compressed on their own goroutines, appended in order
// at the next seal or Sync.
func TestBulkCrashSweep(t *testing.T) {
	var acked map[Key][]byte
	n := vfstest.Sweep(t, rand.New(rand.NewPCG(3, 4)), 2, initCrashStore,
		func(fsys *vfs.MemFS) error {
			acked = map[Key][]byte{}
			return crashWorkloadOf(fsys, crashHome, acked, true)
		},
		func(k int, states []*vfs.MemFS) {
			for _, c := range states {
				checkCrashState(t, k, c, crashHome, acked)
			}
		})
	t.Logf("swept %d crash points", n)
}

// crashSeeds is how many random crash clones each crash point gets:
// ROOK_CRASH_SEEDS raises it for a longer hunt than CI's.
func crashSeeds() int {
	if n, err := strconv.Atoi(os.Getenv("ROOK_CRASH_SEEDS")); err == nil && n > 0 {
		return n
	}
	return 8
}

// TestKilledWriter runs a real writer in a subprocess, kills it with SIGKILL
// in the middle of its puts, and checks that everything it acknowledged
// (printed after Sync returned) is there.
func TestKilledWriter(t *testing.T) {
	if os.Getenv("ROOK_TEST_WRITER") != "" {
		runWriterChild(os.Getenv("ROOK_TEST_WRITER"))
		return
	}
	if testing.Short() {
		t.Skip("subprocess test")
	}
	home := filepath.Join(t.TempDir(), "store")
	if _, err := Init(vfs.OS, nil, home); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWriter$")
	cmd.Env = append(os.Environ(), "ROOK_TEST_WRITER="+home)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A child that never prints what we expect must not hang the test.
	watchdog := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer watchdog.Stop()
	acked := map[Key]bool{}
	sc := bufio.NewScanner(out)
	for sc.Scan() && len(acked) < 400 {
		b, err := hex.DecodeString(strings.TrimSpace(sc.Text()))
		if err != nil || len(b) != len(Key{}) {
			t.Fatalf("child printed %q, not an id", sc.Text())
		}
		acked[Key(b)] = true
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if len(acked) < 400 {
		t.Fatalf("child acknowledged only %d objects", len(acked))
	}
	s, err := Open(home, Options{Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for id := range acked {
		if _, err := s.Get(id); err != nil {
			t.Fatalf("acknowledged object %s lost: %v", Short(id), err)
		}
	}
	rep, err := s.Verify(nil)
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("verify after SIGKILL: %v %v", err, rep.Problems)
	}
}

// runWriterChild puts objects forever, printing each id once Sync returned.
func runWriterChild(home string) {
	s, err := Open(home, Options{Writable: true, SegmentSize: 1 << 20})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	w := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		var ids []Key
		for j := 0; j < 7; j++ {
			r, err := s.Put(Kind(1+j%3), []byte(fmt.Sprintf("child object %d/%d %s", i, j, strings.Repeat("q", (i*7+j)%3000))))
			if err != nil {
				os.Exit(4)
			}
			ids = append(ids, r.ID)
		}
		if err := s.Sync(); err != nil {
			os.Exit(5)
		}
		for _, id := range ids {
			fmt.Fprintln(w, hex.EncodeToString(id[:]))
		}
		w.Flush()
	}
}
