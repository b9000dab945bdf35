// Package fuzzseed writes fuzz seed corpora as files, so every package's
// seeds live in testdata/fuzz/<Target>/ in the format `go test` replays.
package fuzzseed

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Env is the variable that asks a package's TestWriteFuzzSeeds to write.
const Env = "ROOK_WRITE_FUZZ_SEEDS"

// Write stores seeds as testdata/fuzz/<target>/seedNN (go test fuzz v1),
// or skips t unless $ROOK_WRITE_FUZZ_SEEDS is set.
func Write(t testing.TB, corpora map[string][][]byte) {
	t.Helper()
	if os.Getenv(Env) == "" {
		t.Skip("set " + Env + "=1 to regenerate testdata/fuzz")
	}
	for target, seeds := range corpora {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, s := range seeds {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed%02d", i)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
