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

// ewahBitmap writes words as git's EWAH bitmap (bit size, word count,
// the words, the position of the last running-length word).
func ewahBitmap(bits uint32, words ...uint64) []byte {
	b := binary.BigEndian.AppendUint32(nil, bits)
	b = binary.BigEndian.AppendUint32(b, uint32(len(words)))
	for _, w := range words {
		b = binary.BigEndian.AppendUint64(b, w)
	}
	return binary.BigEndian.AppendUint32(b, 0)
}

// The split index's bitmap of deleted entries, as git writes it: a
// running-length word (bit 0: the run's bit, 32 bits of run length in
// words, 31 of literal words after it), then literal words, least
// significant bit first.
func TestGitDeleted(t *testing.T) {
	for _, c := range []struct {
		bitmap []byte
		n      int
		want   []int
	}{
		{nil, 3, nil},
		{ewahBitmap(3, 1<<33, 0b101), 3, []int{0, 2}},
		// A run of one word of zeros, then a literal: bit 64 and 65.
		{ewahBitmap(66, 1<<1|1<<33, 0b11), 70, []int{64, 65}},
		// A run of ones past the entries: clipped to them.
		{ewahBitmap(128, 1|2<<1), 5, []int{0, 1, 2, 3, 4}},
		// A run of 2^32-1 words of ones is never walked past n.
		{ewahBitmap(1<<31, 1|(1<<32-1)<<1), 2, []int{0, 1}},
	} {
		got, err := gitDeleted(c.bitmap, c.n)
		if err != nil {
			t.Fatalf("%x: %v", c.bitmap, err)
		}
		var set []int
		for i, d := range got {
			if d {
				set = append(set, i)
			}
		}
		if !slices.Equal(set, c.want) {
			t.Errorf("%x over %d entries: deleted %v, want %v", c.bitmap, c.n, set, c.want)
		}
	}
	for _, bad := range [][]byte{{1, 2, 3}, ewahBitmap(64, 5<<33)} {
		if _, err := gitDeleted(bad, 10); err == nil {
			t.Errorf("%x read", bad)
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
			if ix, err := readGitIndex(b, h); err == nil {
				gitDeleted(ix.bitmaps, len(ix.entries))
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

// commitArgs commits what is added, with an identity (the helper runs git
// without the user's config).
var commitArgs = []string{"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"}

// A repository vendored in an ignored directory (`.gitignore`: vendor/,
// then `git add -f vendor/lib`, or `git submodule add -f`) is tracked by
// git as a gitlink entry (mode 160000): `git status` is clean and git
// never calls vendor/lib ignored. The user runs `rook checkpoint create`
// at the project's top, then restores it: vendor/lib is gone, nothing of
// it was taken (the checkpoint held .gitignore and main.go only). It
// should take vendor/lib (what the nested repository holds, as a
// checkpoint does for a nested repository no .gitignore matches), as
// README promises: "a file git tracks is never ignored ... a vendored
// out/ is taken, in an ignored directory too".
// Seen failing before the fix (a review of ddaa468).
func TestCheckpointTakesAGitlinkInAnIgnoredDirectory(t *testing.T) {
	r, _, _ := newWorkspace(t)
	base := t.TempDir()
	inner := filepath.Join(base, "vendor", "lib")
	if err := os.MkdirAll(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	gitRepo(t, inner, tree{"lib.go": "package lib\n"}, []string{"add", "."}, commitArgs)
	gitRepo(t, base, tree{".gitignore": "vendor/\n", "main.go": "package main\n"},
		[]string{"add", "."}, []string{"add", "-f", "vendor/lib"}, commitArgs)
	_, m, err := r.CreateCheckpoint("c", base, "", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if got := fileNames(m); !slices.Contains(got, "vendor/lib/lib.go") {
		t.Errorf("git tracks vendor/lib (a gitlink), but the checkpoint holds only %q: a restore does not put the vendored repository back", got)
	}
}

// A submodule (or a nested clone) of the workspace has its own index: a
// file it tracks that its own .gitignore matches (`lib/.gitignore`:
// *.log, `git add -f fixture.log` in lib) is tracked, `git -C lib status
// --ignored` does not list it as ignored. The user checkpoints the
// superproject and restores it elsewhere: lib/fixture.log is missing
// (lib/.gitignore and lib/a.txt are there). A checkpoint of lib itself
// takes it. It should be taken from the superproject too: README says
// "a file git tracks is never ignored", reading "a linked worktree's or
// submodule's [index] through its .git file".
// Seen failing before the fix (a review of ddaa468).
func TestCheckpointTakesWhatANestedRepositoryTracks(t *testing.T) {
	r, _, _ := newWorkspace(t)
	base := t.TempDir()
	inner := filepath.Join(base, "lib")
	if err := os.MkdirAll(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	gitRepo(t, inner, tree{".gitignore": "*.log\n", "a.txt": "a\n", "fixture.log": "tracked fixture\n", "debug.log": "untracked\n"},
		[]string{"add", "."}, []string{"add", "-f", "fixture.log"}, commitArgs)
	gitRepo(t, base, tree{"top.txt": "top\n"}, []string{"add", "."}, commitArgs)
	_, m, err := r.CreateCheckpoint("c", inner, "", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(fileNames(m), " "); got != ".gitignore a.txt fixture.log" {
		t.Fatalf("a checkpoint of the submodule itself holds %s", got)
	}
	_, m, err = r.CreateCheckpoint("c", base, "", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(fileNames(m), " "); got != "lib/.gitignore lib/a.txt lib/fixture.log top.txt" {
		t.Errorf("a checkpoint of the superproject holds\n %s\nwant\n lib/.gitignore lib/a.txt lib/fixture.log top.txt\n(lib/fixture.log is tracked by lib's index)", got)
	}
}

// With a split index (core.splitIndex true, `git update-index
// --split-index`), the user stops tracking a secret committed by mistake
// and ignores it: `git rm --cached .env`, `echo .env > .gitignore`.
// `git ls-files` no longer names .env and `git status --ignored` lists it
// as ignored (!! .env). `rook checkpoint create` still takes .env into
// the store (and a restore writes it out), as if git tracked it. It
// should be left out, as every ignored, untracked file is.
// Seen failing before the fix (a review of ddaa468).
func TestCheckpointLeavesOutWhatASplitIndexNoLongerTracks(t *testing.T) {
	r, _, _ := newWorkspace(t)
	files := tree{".env": "SECRET=1\n"}
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"} {
		files[n+".txt"] = n + "\n"
	}
	repo := gitRepo(t, t.TempDir(), files,
		[]string{"config", "core.splitIndex", "true"},
		[]string{"add", "."}, commitArgs,
		[]string{"update-index", "--split-index"},
		[]string{"rm", "-q", "--cached", ".env"})
	writeTree(t, repo, tree{".gitignore": ".env\n"})
	if sh, _ := filepath.Glob(filepath.Join(repo, ".git", "sharedindex.*")); len(sh) == 0 {
		t.Fatal("no shared index: the repository is not split")
	}
	_, m, err := r.CreateCheckpoint("c", repo, "", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if got := fileNames(m); slices.Contains(got, ".env") {
		t.Errorf("git no longer tracks .env (git rm --cached) and .gitignore ignores it, but the checkpoint took it: %q", got)
	}
}

// The repository's .git is a link to its git directory (kept elsewhere:
// `mv .git ~/gitdirs/p.git && ln -s ~/gitdirs/p.git .git`, as some tools
// and dotfile managers lay it out); git follows it: `git ls-files` names
// keep.log, `git status --ignored` does not call it ignored. The user's
// `rook checkpoint create` leaves keep.log out, and says nothing:
// skipped is empty, though README says an index that cannot be read is
// named there. It should take keep.log (read the index the link leads
// to), or at least say in skipped that git's index was not read.
// Seen failing before the fix (a review of ddaa468).
func TestCheckpointOfARepositoryWhoseDotGitIsALink(t *testing.T) {
	r, _, _ := newWorkspace(t)
	repo := gitRepo(t, t.TempDir(), tree{".gitignore": "*.log\n", "a.txt": "a\n", "keep.log": "tracked\n"},
		[]string{"add", "."}, []string{"add", "-f", "keep.log"}, commitArgs)
	elsewhere := filepath.Join(t.TempDir(), "p.git")
	if err := os.Rename(filepath.Join(repo, ".git"), elsewhere); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(repo, ".git")); err != nil {
		t.Fatal(err)
	}
	_, m, err := r.CreateCheckpoint("c", repo, "", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	said := slices.ContainsFunc(m.Skipped, func(s string) bool { return strings.Contains(s, "index") })
	if got := fileNames(m); !slices.Contains(got, "keep.log") && !said {
		t.Errorf("git tracks keep.log (its .git is a link), the checkpoint holds %q and skipped %q says nothing of it", got, m.Skipped)
	}
}

// .git/index is a link (to an index kept elsewhere) or a directory: the
// checkpoint names it in skipped, but as "replaced (by a link, or another
// file) while being read" / "became a directory while being read": it
// was a link, or a directory, before rook looked, and nothing replaced
// it. The user goes looking for a tool racing rook. It should say what it
// is (a link, a directory), as it does for a named pipe ("is a named
// pipe, not a regular file").
// Seen failing before the fix (a review of ddaa468).
func TestCheckpointSaysWhatAnUnreadableIndexIs(t *testing.T) {
	r, _, _ := newWorkspace(t)
	for _, c := range []struct {
		name string
		make func(index string) error
	}{
		{"link", func(index string) error {
			target := filepath.Join(t.TempDir(), "index")
			if err := os.Rename(index, target); err != nil {
				return err
			}
			return os.Symlink(target, index)
		}},
		{"directory", func(index string) error {
			if err := os.Remove(index); err != nil {
				return err
			}
			return os.Mkdir(index, 0o755)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo := gitRepo(t, t.TempDir(), tree{".gitignore": "*.log\n", "a.txt": "a\n", "keep.log": "tracked\n"},
				[]string{"add", "."}, []string{"add", "-f", "keep.log"})
			if err := c.make(filepath.Join(repo, ".git", "index")); err != nil {
				t.Fatal(err)
			}
			_, m, err := r.CreateCheckpoint("c", repo, "", DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range m.Skipped {
				if strings.Contains(s, "while being read") {
					t.Errorf("skipped says %q: nothing changed while rook read it", s)
				}
			}
		})
	}
}
