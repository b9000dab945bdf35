package agent

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gitRepo makes a git repository at dir with the files of tr, runs each
// of cmds in it (git's arguments), and returns dir. Skips without git.
func gitRepo(t *testing.T, dir string, tr tree, cmds ...[]string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	writeTree(t, dir, tr)
	for _, args := range append([][]string{{"init", "-q"}}, cmds...) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return dir
}

// A file git tracks though a .gitignore matches it (added before the
// pattern, or with `git add -f`: a committed fixture `*.log`, a vendored
// build output) is part of the project: git never ignores it, and a
// checkpoint left it out, so a restore never put it back. The checkpoint
// now reads what git tracks from its index and takes such files, in an
// ignored directory too, and still leaves out what is ignored and not
// tracked beside them.
func TestCheckpointTakesFilesGitTracksThoughAGitignoreMatchesThem(t *testing.T) {
	r, _, _ := newWorkspace(t)
	for _, c := range []struct {
		name string
		cmds [][]string
	}{
		{"index v2", nil},
		{"index v4", [][]string{{"update-index", "--index-version", "4"}}},
		{"split index", [][]string{{"update-index", "--split-index"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo := gitRepo(t, t.TempDir(), tree{
				".gitignore":         "*.log\nout/\n",
				"app/main.go":        "main\n",
				"app/fixture.log":    "tracked log\n",
				"app/debug.log":      "untracked log\n",
				"app/out/kept.txt":   "tracked output\n",
				"app/out/gen.txt":    "untracked output\n",
				"app/out/sub/k2.txt": "tracked, deeper\n",
				"app/out/other/x":    "untracked dir in ignored dir\n",
			}, append([][]string{
				{"add", "."},
				{"add", "-f", "app/fixture.log", "app/out/kept.txt", "app/out/sub/k2.txt"},
			}, c.cmds...)...)
			for _, ws := range []struct{ dir, want string }{
				{repo, ".gitignore app/fixture.log app/main.go app/out/kept.txt app/out/sub/k2.txt"},
				{filepath.Join(repo, "app"), "fixture.log main.go out/kept.txt out/sub/k2.txt"},
			} {
				_, m, err := r.CreateCheckpoint("c", ws.dir, "", DefaultLimits)
				if err != nil {
					t.Fatal(err)
				}
				if got := strings.Join(fileNames(m), " "); got != ws.want {
					t.Errorf("a checkpoint of %s holds\n %s\nwant\n %s", ws.dir, got, ws.want)
				}
				for _, s := range m.Skipped {
					if strings.Contains(s, "index") {
						t.Errorf("skipped: %s", s)
					}
				}
			}
		})
	}
}

// A linked worktree (`git worktree add`) has a .git file naming its git
// directory, whose index is the worktree's own.
func TestCheckpointReadsTheIndexOfALinkedWorktree(t *testing.T) {
	r, _, _ := newWorkspace(t)
	base := t.TempDir()
	main := filepath.Join(base, "main")
	os.Mkdir(main, 0o755)
	gitRepo(t, main, tree{".gitignore": "*.log\n", "a.txt": "a\n", "t.log": "tracked\n"},
		[]string{"add", "."}, []string{"add", "-f", "t.log"},
		[]string{"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"},
		[]string{"worktree", "add", "-q", filepath.Join(base, "wt")})
	wt := filepath.Join(base, "wt")
	writeTree(t, wt, tree{"u.log": "untracked\n"})
	_, m, err := r.CreateCheckpoint("c", wt, "", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(fileNames(m), " "); got != ".gitignore a.txt t.log" {
		t.Errorf("a checkpoint of the worktree holds %s, want .gitignore a.txt t.log", got)
	}
}

// An index rook cannot read is said in skipped, and the checkpoint goes on
// as before it read indexes: what a .gitignore matches is left out.
func TestCheckpointSaysAnUnreadableGitIndex(t *testing.T) {
	r, _, _ := newWorkspace(t)
	repo := t.TempDir()
	writeTree(t, repo, tree{".gitignore": "*.log\n", "a.txt": "a\n", "t.log": "log\n", ".git/index": "DIRC\x00\x00\x00\x09junk"})
	_, m, err := r.CreateCheckpoint("c", repo, "", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(fileNames(m), " "); got != ".gitignore a.txt" {
		t.Errorf("holds %s", got)
	}
	if !slices.ContainsFunc(m.Skipped, func(s string) bool {
		return strings.HasPrefix(s, "git's index: ") && strings.Contains(s, "version 9") && strings.HasSuffix(s, "files git tracks that a .gitignore matches are left out")
	}) {
		t.Errorf("skipped %q does not say the index did not read", m.Skipped)
	}
}

// buildGitIndex writes an index of names as git does (version 2, 3 or 4;
// hashLen bytes of object id), for the parser's tests.
func buildGitIndex(version uint32, hashLen int, names []string) []byte {
	var b bytes.Buffer
	b.WriteString("DIRC")
	binary.Write(&b, binary.BigEndian, version)
	binary.Write(&b, binary.BigEndian, uint32(len(names)))
	prev := ""
	for _, name := range names {
		start := b.Len()
		var stat [40]byte
		binary.BigEndian.PutUint32(stat[24:], 0o100644)
		b.Write(stat[:])
		b.Write(make([]byte, hashLen))
		n := min(len(name), 0xfff)
		binary.Write(&b, binary.BigEndian, uint16(n))
		if version == 4 {
			common := 0
			for common < len(prev) && common < len(name) && prev[common] == name[common] {
				common++
			}
			b.Write(gitVarintBytes(uint64(len(prev) - common)))
			b.WriteString(name[common:])
			b.WriteByte(0)
		} else {
			b.WriteString(name)
			pad := 8 - (b.Len()-start)%8
			b.Write(make([]byte, pad))
		}
		prev = name
	}
	return b.Bytes()
}

// gitVarintBytes encodes v as git's offset varint.
func gitVarintBytes(v uint64) []byte {
	var buf [16]byte
	pos := len(buf) - 1
	buf[pos] = byte(v & 127)
	for v >>= 7; v > 0; v >>= 7 {
		v--
		pos--
		buf[pos] = 128 | byte(v&127)
	}
	return buf[pos:]
}

func TestParseGitIndex(t *testing.T) {
	names := []string{"a", "a/b.txt", "a/long/" + strings.Repeat("x", 300), "b c", "z/\xff"}
	for _, v := range []uint32{2, 3, 4} {
		for _, h := range []int{20, 32} {
			got, err := parseGitIndex(buildGitIndex(v, h, names), h)
			if err != nil || !slices.Equal(got, names) {
				t.Errorf("version %d, hash %d: %q, %v", v, h, got, err)
			}
		}
	}
	for _, v := range []uint64{0, 1, 127, 128, 255, 16511, 16512, 1 << 40} {
		if got, w := gitVarint(gitVarintBytes(v)); got != v || w != len(gitVarintBytes(v)) {
			t.Errorf("varint %d: %d (%d bytes)", v, got, w)
		}
	}
	for _, bad := range [][]byte{nil, []byte("DIRC"), []byte("DIRX\x00\x00\x00\x02\x00\x00\x00\x00"), []byte("DIRC\x00\x00\x00\x02\xff\xff\xff\xff")} {
		if _, err := parseGitIndex(bad, 20); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// FuzzParseGitIndex: any bytes parse or fail, never panic; an index built
// from names gives those names back.
func FuzzParseGitIndex(f *testing.F) {
	f.Add(buildGitIndex(2, 20, []string{"a", "b/c"}), "x\x00y", uint8(2))
	f.Add(buildGitIndex(4, 20, []string{"src/a.go", "src/b.go", "t"}), "src/a\x00src/ab", uint8(4))
	f.Add(buildGitIndex(3, 32, []string{"d/"}), "d/e", uint8(3))
	f.Fuzz(func(t *testing.T, b []byte, joined string, version uint8) {
		for _, h := range []int{20, 32} {
			if names, err := parseGitIndex(b, h); err == nil && len(names) > len(b) {
				t.Fatalf("%d names from %d bytes", len(names), len(b))
			}
		}
		var names []string
		for _, n := range strings.Split(joined, "\x00") {
			if n != "" && len(n) < 0xfff && !strings.HasSuffix(n, "/") {
				names = append(names, n)
			}
		}
		v := uint32(version%3) + 2
		got, err := parseGitIndex(buildGitIndex(v, 20, names), 20)
		if err != nil || !slices.Equal(got, names) && !(len(got) == 0 && len(names) == 0) {
			t.Fatalf("version %d: %q -> %q, %v", v, names, got, err)
		}
	})
}
