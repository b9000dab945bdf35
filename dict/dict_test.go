package dict

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/rookhq/rook/internal/vfs"
)

// TestBuildWithALargeSample: a sample of a few hundred KB (a large text
// file among the objects of the file kind) made the builder panic; Build
// learns from each sample's head and returns a dictionary that works.
func TestBuildWithALargeSample(t *testing.T) {
	var samples [][]byte
	for i := range 40 {
		samples = append(samples, fmt.Appendf(nil, "package x%d\n\nfunc F%d() int { return %d }\n%s", i, i, i, bytes.Repeat([]byte("// a comment line, the same in every file\n"), 50+i)))
	}
	big := make([]byte, 0, 430<<10)
	for i := 0; len(big) < 420<<10; i++ {
		big = fmt.Appendf(big, "line %d of a big text file, with words %d\n", i, i*7)
	}
	samples = append(samples, big)
	content, err := Build(samples, 16<<10, 5)
	if err != nil {
		t.Fatal(err)
	}
	if !IsZstdDict(content) || len(content) > 16<<10 {
		t.Fatalf("a dictionary of %d bytes", len(content))
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderDict(content))
	if err != nil {
		t.Fatal(err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderDicts(content))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		got, err := dec.DecodeAll(enc.EncodeAll(s, nil), nil)
		if err != nil || !bytes.Equal(got, s) {
			t.Fatalf("round trip through the dictionary: %v", err)
		}
	}
}

// TestHighestRecord: the record of the highest id given out reads back,
// and any damage or a newer version is refused rather than guessed at.
func TestHighestRecord(t *testing.T) {
	b := EncodeHighest(7)
	if len(b) != 20 {
		t.Fatalf("%d bytes", len(b))
	}
	if id, err := DecodeHighest(b); err != nil || id != 7 {
		t.Fatalf("round trip: %d %v", id, err)
	}
	for i := range b {
		bad := bytes.Clone(b)
		bad[i] ^= 0x10
		if _, err := DecodeHighest(bad); err == nil {
			t.Fatalf("byte %d flipped: accepted", i)
		}
	}
	newer := bytes.Clone(b)
	newer[8] = 2
	if _, err := DecodeHighest(newer); err == nil || !strings.Contains(err.Error(), "upgrade rook") {
		t.Fatalf("version 2: %v", err)
	}
	for _, n := range []int{0, 9, 19} {
		if _, err := DecodeHighest(b[:n]); err == nil {
			t.Fatalf("%d bytes: accepted", n)
		}
	}
	if _, err := DecodeHighest(append(bytes.Clone(b), 0)); err == nil {
		t.Fatal("21 bytes: accepted")
	}
}

// TestMissingWhenTheIDRecordIsDamaged: with dict/HIGHEST damaged, Missing
// listed nothing (it counted up to the id HIGHEST could not say), so a lost
// dictionary file below the highest one present went unnamed by doctor;
// IDsError says why no id can be given out, and what to do.
func TestMissingWhenTheIDRecordIsDamaged(t *testing.T) {
	fsys := vfs.NewMem()
	now := time.Unix(1700000000, 0)
	if err := fsys.MkdirAll("/d", 0o700); err != nil {
		t.Fatal(err)
	}
	for _, id := range []uint32{1, 3} { // 2 lost
		if err := fsys.WriteFileAtomic("/d/"+FileName(id), Encode(id, 1, now, []byte("content")), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	bad := EncodeHighest(3)
	bad[len(bad)-1] ^= 1
	if err := fsys.WriteFileAtomic("/d/"+HighestFile, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir(fsys, "/d")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(d.Missing()); got != "[2]" {
		t.Fatalf("missing %s, want [2]", got)
	}
	if err := d.IDsError(); err == nil || !strings.Contains(err.Error(), "/d/HIGHEST: checksum mismatch") || !strings.Contains(err.Error(), "put /d/HIGHEST back from a backup") {
		t.Fatalf("IDsError: %v", err)
	}
	if _, err := d.NextID(); err == nil || err.Error() != d.IDsError().Error() {
		t.Fatalf("NextID: %v, IDsError: %v", err, d.IDsError())
	}
}

// TestLookupOfAFileAddedDamaged: a dictionary file that appeared after the
// directory was opened and does not decode was reported as missing, so the
// user looked for a file that is there. It is reported as damaged.
func TestLookupOfAFileAddedDamaged(t *testing.T) {
	fsys := vfs.NewMem()
	if err := fsys.MkdirAll("/d", 0o700); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir(fsys, "/d")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Lookup(1); err == nil || err.Error() != "dictionary 1 is missing from /d" {
		t.Fatalf("no file: %v", err)
	}
	b := Encode(1, 1, time.Unix(0, 0), []byte("content"))
	b[len(b)-1] ^= 1
	if err := fsys.WriteFileAtomic("/d/00000001.zdict", b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Lookup(1); err == nil || err.Error() != "dictionary 1 (/d/00000001.zdict) is damaged: checksum mismatch" {
		t.Fatalf("a damaged file: %v", err)
	}
	b[len(b)-1] ^= 1
	if err := fsys.WriteFileAtomic("/d/00000001.zdict", b, 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := d.Lookup(1); err != nil || string(c) != "content" {
		t.Fatalf("the file put back: %q %v", c, err)
	}
}

// TestLookupAfterTheFileIsPutBack: a dictionary damaged when the directory
// was opened stayed damaged for that process, even once the user put the
// file back from a backup (a long-running MCP server kept failing).
func TestLookupAfterTheFileIsPutBack(t *testing.T) {
	fsys := vfs.NewMem()
	if err := fsys.MkdirAll("/d", 0o700); err != nil {
		t.Fatal(err)
	}
	good := Encode(1, 1, time.Unix(0, 0), []byte("content"))
	bad := bytes.Clone(good)
	bad[len(bad)-1] ^= 1
	if err := fsys.WriteFileAtomic("/d/00000001.zdict", bad, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir(fsys, "/d")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Lookup(1); err == nil || err.Error() != "dictionary 1 (/d/00000001.zdict) is damaged: checksum mismatch" {
		t.Fatalf("damaged: %v", err)
	}
	if err := fsys.WriteFileAtomic("/d/00000001.zdict", good, 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := d.Lookup(1); err != nil || string(c) != "content" {
		t.Fatalf("the file put back: %q %v", c, err)
	}
	if l := d.List(); len(l) != 1 || l[0].Damaged != "" {
		t.Fatalf("listed after it was put back: %+v", l)
	}
}

// TestLookupOfADamagedFileReadsItOnce: every lookup of a damaged
// dictionary read and checked its whole file again (5 ms for 4 MiB), so
// rook store verify of many records that need it was slow. The file is
// read once while it stays as it is, every lookup still says the same,
// and a file put back is read again.
func TestLookupOfADamagedFileReadsItOnce(t *testing.T) {
	fsys := vfs.NewMem()
	if err := fsys.MkdirAll("/d", 0o700); err != nil {
		t.Fatal(err)
	}
	good := Encode(1, 1, time.Unix(0, 0), []byte("content"))
	bad := bytes.Clone(good)
	bad[len(bad)-1] ^= 1
	if err := fsys.WriteFileAtomic("/d/00000001.zdict", bad, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir(fsys, "/d")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	reads := 0
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpOpenRead && path == "/d/00000001.zdict" {
			mu.Lock()
			reads++
			mu.Unlock()
		}
		return nil
	})
	const want = "dictionary 1 (/d/00000001.zdict) is damaged: checksum mismatch"
	for range 100 {
		if _, err := d.Lookup(1); err == nil || err.Error() != want {
			t.Fatalf("damaged: %v", err)
		}
	}
	if reads != 1 {
		t.Fatalf("100 lookups read the damaged file %d times, want 1", reads)
	}
	if err := fsys.WriteFileAtomic("/d/00000001.zdict", good, 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := d.Lookup(1); err != nil || string(c) != "content" {
		t.Fatalf("the file put back: %q %v", c, err)
	}
}

// TestAddWhoseDirectorySyncFailedLeavesNoFile: a dictionary file renamed
// into place whose directory sync then failed (a full disk) was left
// there: the next writer took it as its kind's newest and compressed
// with it, and a power cut could then take the file's name and leave
// those records needing a dictionary that is gone. Add takes the file
// back; its id stays given out.
func TestAddWhoseDirectorySyncFailedLeavesNoFile(t *testing.T) {
	fsys := vfs.NewMem()
	if err := fsys.MkdirAll("/d", 0o700); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir(fsys, "/d")
	if err != nil {
		t.Fatal(err)
	}
	syncs := 0
	fsys.SetHook(func(op vfs.Op, _ string) error {
		if op == vfs.OpSyncDir {
			if syncs++; syncs == 2 { // HIGHEST's is the first
				return vfs.ErrInjected
			}
		}
		return nil
	})
	if _, err := d.Add(1, []byte("content"), time.Unix(0, 0)); err == nil {
		t.Fatal("Add reported success though its directory sync failed")
	}
	fsys.SetHook(nil)
	next, err := OpenDir(fsys, "/d")
	if err != nil {
		t.Fatal(err)
	}
	if id := next.Newest(1); id != None {
		t.Fatalf("the next writer takes dictionary %d, whose name a power cut can take", id)
	}
	if id, err := next.NextID(); err != nil || id != 2 {
		t.Fatalf("the next id: %d %v, want 2", id, err)
	}
}

// `rook store train --size N` made dictionaries larger than N: --size
// 16384 gave 16,533-byte dictionaries, --size 256 a 395-byte one (the
// builder's bound is the learnt content's; its header and entropy tables
// come on top). Build now keeps the whole dictionary to the size asked.
func TestBuildKeepsToTheSizeAsked(t *testing.T) {
	var samples [][]byte
	for i := 0; i < 400; i++ {
		samples = append(samples, []byte(fmt.Sprintf(`{"role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"I will read src/turn_%d.rs and run the tests"}],"usage":{"input_tokens":%d,"output_tokens":%d}}`, i, i*37, i%500)))
	}
	for _, size := range []int{256, 1024, 16384} {
		content, err := Build(samples, size, 1)
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if len(content) > size {
			t.Errorf("Build(size %d) made a %d-byte dictionary: %d bytes more than asked", size, len(content), len(content)-size)
		}
	}
}
