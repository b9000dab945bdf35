package bench

import (
	"os/exec"
	"testing"
)

// TestPeers runs every peer on a small fixture: each stores something, and
// compressing the transcript makes it smaller.
func TestPeers(t *testing.T) {
	fx := CompactionFixture(30, 4, 2)
	jsonl, err := PeerJSONL(t.TempDir(), fx.Events)
	if err != nil {
		t.Fatal(err)
	}
	if !jsonl.Measured || jsonl.Bytes <= fx.Logical/2 {
		t.Fatalf("JSONL: %+v for %d logical bytes", jsonl, fx.Logical)
	}
	for _, level := range []int{3, 19} {
		z, err := PeerJSONLZstd(t.TempDir(), fx.Events, level)
		if err != nil {
			t.Fatal(err)
		}
		if !z.Measured || z.Bytes <= 0 || z.Bytes >= jsonl.Bytes {
			t.Fatalf("zstd -%d: %+v, JSONL %d bytes", level, z, jsonl.Bytes)
		}
		t.Logf("%-40s %8d bytes", z.Name, z.Bytes)
	}
	sq, err := PeerSQLite(t.TempDir(), fx.Events)
	if err != nil {
		t.Fatal(err)
	}
	if !sq.Measured || sq.Bytes < fx.Logical {
		t.Fatalf("SQLite: %+v for %d logical bytes (it neither dedups nor compresses)", sq, fx.Logical)
	}
	t.Logf("%-40s %8d bytes", jsonl.Name, jsonl.Bytes)
	t.Logf("%-40s %8d bytes", sq.Name, sq.Bytes)

	gs, err := PeerGit(t.TempDir(), fx.Events)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 2 {
		t.Fatalf("git: %d results, want 2", len(gs))
	}
	if _, err := exec.LookPath("git"); err != nil {
		if gs[0].Measured || gs[1].Measured {
			t.Fatalf("git absent but measured: %+v", gs)
		}
		t.Log("git not on PATH: git peers skipped")
	} else {
		for _, g := range gs {
			if !g.Measured || g.Bytes <= 0 {
				t.Fatalf("git: %+v", g)
			}
			t.Logf("%-40s %8d bytes", g.Name, g.Bytes)
		}
	}

	all, err := AllPeers(t.TempDir(), fx.Events)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 6 {
		t.Fatalf("AllPeers: %d results, want 6", len(all))
	}
	for _, p := range PublishedOriginal() {
		if p.Measured || p.Bytes <= 0 || p.Note != "published, not measured" {
			t.Fatalf("published: %+v", p)
		}
	}
}
