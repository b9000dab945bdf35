package agent

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// How a tree capture (and the diff's walk for files added) reads the
// .gitignore files it honours: readGitignore.
// README: `rook checkpoint create before-refactor  # the whole workspace,
// .gitignore honoured, bounded`; docs/storage.md: "bounded by 5,000 files,
// 256 MiB, 16 MiB a file unless raised". agent/disk.go's openRegular exists
// because "opening [a named pipe] for reading waits for a writer (forever)",
// and the capture passes named pipes over ("a named pipe has no content to
// keep (and opening it would wait for a writer)"). Yet CaptureTree (and the
// diff's walk, addedWalker) reads each .gitignore with a bare os.ReadFile:
// it follows a link, opens a named pipe and waits, and reads whatever it
// gets to its end, with no bound.

// fifoGitignore makes ws/rel/.gitignore a named pipe and returns a
// function that lets a reader blocked on it go (opens it for writing, and
// closes it: the reader sees its end).
func fifoGitignore(t *testing.T, ws, rel string) func() {
	t.Helper()
	p := filepath.Join(ws, filepath.FromSlash(rel), ".gitignore")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	release := func() {
		// Non-blocking: it fails (ENXIO) while no reader waits, which
		// is fine then.
		if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}
	t.Cleanup(release)
	return release
}

// The user (or a tool: a test harness, a dev server) has a named pipe
// called .gitignore in the workspace, and runs `rook checkpoint create c`.
// It did: the checkpoint never ends; it holds the store's write
// lock while it waits, so every other writing rook command waits behind
// it (seen: `rook checkpoint create c` in a directory holding a fifo
// .gitignore ran until killed by `timeout 10`). git 2.39 hangs too, but
// rook promises a bounded capture and passes named pipes over everywhere
// else (they are listed in `skipped`). Now: the capture
// does not open a .gitignore that is not a regular file (or opens it
// without waiting, as openRegular does), goes on, and says so.
// The cause: agent/capture.go: (*capturer).walk reads
// filepath.Join(abs, ".gitignore") with os.ReadFile.
func TestCheckpointDoesNotHangOnAFifoGitignore(t *testing.T) {
	r, ws, _ := newWorkspace(t)
	writeTree(t, ws, tree{"a.txt": "a\n", "sub/b.txt": "b\n"})
	release := fifoGitignore(t, ws, "sub")
	type result struct {
		m   *Manifest
		err error
	}
	done := make(chan result, 1)
	go func() {
		_, m, err := r.CreateCheckpoint("c", ws, "", DefaultLimits)
		done <- result{m, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			t.Fatalf("checkpoint create with a named pipe for sub/.gitignore: %v, want the workspace captured", res.err)
		}
		if got := strings.Join(fileNames(res.m), " "); got != "a.txt sub/b.txt" {
			t.Errorf("the checkpoint holds %s, want a.txt sub/b.txt", got)
		}
	case <-time.After(5 * time.Second):
		release() // let the capture end, so the test's store closes
		<-done
		t.Fatalf("checkpoint create waited 5 s on sub/.gitignore, a named pipe, until something wrote to it: it hangs")
	}
}

// The same named pipe under a directory a session captured whole: `rook
// session diff last` (and a rewind) walks that directory for files added
// to it, reading its .gitignore files the same way, and hangs there.
// The cause: agent/capture_dirs.go: (*addedWalker).walk and top read
// .gitignore with os.ReadFile.
func TestDiffDoesNotHangOnAFifoGitignore(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"d/a.txt": "a\n"})
	if _, _, err := r.CaptureSession(id, []string{"d"}, "write", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"d/new.txt": "new\n"})
	release := fifoGitignore(t, ws, "d")
	type result struct {
		d   SessionDiff
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := r.Diff(id, nil, false)
		done <- result{d, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			t.Fatalf("session diff with a named pipe for d/.gitignore: %v", res.err)
		}
	case <-time.After(5 * time.Second):
		release()
		<-done
		t.Fatalf("session diff waited 5 s on d/.gitignore, a named pipe: it hangs")
	}
}

// The user's workspace has .gitignore as a link to a file outside it (a
// shared ignore file kept elsewhere, or, as here, /dev/zero), and runs
// `rook checkpoint create c`. It did: the capture reads through the
// link, to its end: from /dev/zero it grows its buffer until the process
// runs out of memory (seen: under `ulimit -v 4000000` the binary died with
// "fatal error: runtime: out of memory" and a goroutine dump; without a
// limit it takes the machine's memory). A 1 GiB .gitignore took 5.4 GB of
// RSS and 27 s before the capture even got to its file bound. Now:
// a .gitignore is read as the capture reads a file, bounded (git
// itself does not follow a .gitignore that is a link: "warning: unable to
// access '.gitignore': Too many levels of symbolic links"; capture.go:
// "nothing is read or written outside the workspace"); one over the bound
// or not a regular file is passed over and said. The cause:
// agent/capture.go: (*capturer).walk, os.ReadFile of .gitignore (follows
// the link, no bound); the same in CaptureTree's loop over the
// directories above --path and in capture_dirs.go.
//
// It runs the capture in a child process, killed once its resident memory
// passes 512 MiB (and whose address space is limited to 4 GiB), so that
// the bug costs this machine little.
func TestCheckpointReadsNoGitignoreLinkToAnEndlessFile(t *testing.T) {
	if os.Getenv("ROOK_TEST_CHILD_DEVZERO") == "1" {
		lim := syscall.Rlimit{Cur: 4 << 30, Max: 4 << 30}
		if err := syscall.Setrlimit(syscall.RLIMIT_AS, &lim); err != nil {
			t.Skipf("setrlimit: %v", err)
		}
		r, ws, _ := newWorkspace(t)
		writeTree(t, ws, tree{"a.txt": "a\n", ".gitignore": "link:/dev/zero"})
		_, m, err := r.CreateCheckpoint("c", ws, "", DefaultLimits)
		if err != nil {
			t.Fatalf("checkpoint create: %v", err)
		}
		if _, ok := m.Files["a.txt"]; !ok {
			t.Fatalf("a.txt not captured: %v", fileNames(m))
		}
		return
	}
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCheckpointReadsNoGitignoreLinkToAnEndlessFile$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "ROOK_TEST_CHILD_DEVZERO=1", "GOTRACEBACK=none")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(60 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("checkpoint create with .gitignore a link to /dev/zero: %v\n%.1500s", err, out.String())
			}
			return
		case <-deadline:
			cmd.Process.Kill()
			<-done
			t.Fatalf("checkpoint create with .gitignore a link to /dev/zero ran 60 s")
		case <-tick.C:
			if rss := residentBytes(cmd.Process.Pid); rss > 512<<20 {
				cmd.Process.Kill()
				<-done
				t.Fatalf("checkpoint create with .gitignore a link to /dev/zero: its memory grew past %d MiB (reading /dev/zero through the link, to no end): killed", rss>>20)
			}
		}
	}
}

// residentBytes is the resident memory of process pid, in bytes (0 if unknown).
func residentBytes(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			var kb int64
			fmt.Sscan(f[1], &kb)
			return kb << 10
		}
	}
	return 0
}

// The user runs `rook checkpoint create c` (or a session's tools capture)
// in a package of a monorepo, /repo/app, whose .gitignore is the
// repository's, /repo/.gitignore (".env", "*.log", ".next/": one ignore
// file at the top is the usual layout). It did: none of it is
// honoured: app/.env (a secret), app/x.log and the whole of app/.next/ (a
// build cache of thousands of files, which then trips the 5,000-file
// bound) are captured; `git status --ignored` in /repo/app lists them as
// ignored (seen: `!! app/.env`, `!! app/.next/`, `!! app/x.log`). Now:
// ".gitignore honoured" (README) means the .gitignore files
// git applies to the workspace, those of the directories above it up to
// the repository's top (where .git is) included, as the capture already
// does for the directories above a --path. The cause:
// agent/capture.go: CaptureTree / (*capturer).walk read .gitignore files
// from the workspace down only.
func TestCheckpointHonoursTheRepositorysGitignoreAboveTheWorkspace(t *testing.T) {
	r, _, _ := newWorkspace(t)
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeTree(t, repo, tree{
		".gitignore":             ".env\n*.log\n.next/\n",
		"app/src/main.js":        "main\n",
		"app/.env":               "SECRET=1\n",
		"app/x.log":              "log\n",
		"app/.next/cache/a.pack": "cache\n",
	})
	if _, err := exec.LookPath("git"); err == nil {
		// What git says of the same tree, for the record.
		cmd := exec.Command("git", "init", "-q")
		cmd.Dir = repo
		if cmd.Run() == nil {
			out, _ := exec.Command("git", "-C", filepath.Join(repo, "app"), "ls-files", "--others", "--exclude-standard").Output()
			if got := strings.TrimSpace(string(out)); got != "src/main.js" {
				t.Logf("git ls-files --others --exclude-standard in app: %q", got)
			}
		}
	}
	_, m, err := r.CreateCheckpoint("c", filepath.Join(repo, "app"), "", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(fileNames(m), " "); got != "src/main.js" {
		t.Errorf("a checkpoint of /repo/app holds %s, want src/main.js alone: /repo/.gitignore ignores .env, *.log and .next/", got)
	}
}

// A .gitignore that is a link is not followed (git does not follow one
// either): its patterns are not applied, and the checkpoint names it in
// skipped. One past maxGitignoreBytes fails the checkpoint, naming it:
// its patterns not applied, what they leave out (a secret) would be
// captured.
func TestCheckpointNamesAGitignoreItDoesNotApply(t *testing.T) {
	r, ws, _ := newWorkspace(t)
	outside := t.TempDir()
	writeTree(t, outside, tree{"ignore": "*.log\n"})
	writeTree(t, ws, tree{"a.txt": "a\n", "x.log": "log\n", ".gitignore": "link:" + filepath.Join(outside, "ignore")})
	_, m, err := r.CreateCheckpoint("c", ws, "", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	// The link itself leads outside: left out, and listed, as any.
	if got := strings.Join(fileNames(m), " "); got != "a.txt x.log" {
		t.Errorf("files %s, want a.txt x.log", got)
	}
	if got := strings.Join(m.Skipped, "\n"); !strings.Contains(got, ".gitignore: a link, not followed") {
		t.Errorf("skipped %q, want the link .gitignore named", m.Skipped)
	}

	writeTree(t, ws, tree{"sub/.gitignore": strings.Repeat("#\n", maxGitignoreBytes/2+1), "sub/k.txt": "k\n"})
	_, _, err = r.CreateCheckpoint("d", ws, "", DefaultLimits)
	var ge *GitignoreError
	if !errors.As(err, &ge) || ge.Path != "sub/.gitignore" || !ge.TooLarge {
		t.Fatalf("checkpoint with a sub/.gitignore past %d bytes: %v, want a GitignoreError naming it", maxGitignoreBytes, err)
	}
	if !strings.Contains(err.Error(), "sub/.gitignore is larger than 4 MiB") || !strings.Contains(err.Error(), "nothing saved") {
		t.Errorf("error %q", err)
	}
	// The diff's walk of a directory captured whole reads no .gitignore
	// (a session capture applies none): a large one is a file added.
	r2, ws2, id := newWorkspace(t)
	writeTree(t, ws2, tree{"d/a.txt": "a\n"})
	if _, _, err := r2.CaptureSession(id, []string{"d"}, "write", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws2, tree{"d/.gitignore": strings.Repeat("#\n", maxGitignoreBytes/2+1), "d/new.txt": "n\n"})
	d, err := r2.Diff(id, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Unreadable) != 0 || len(d.Files) != 2 {
		t.Errorf("unreadable %+v, files %+v: want d/.gitignore and d/new.txt added, nothing unreadable", d.Unreadable, d.Files)
	}
}

// Above the workspace, the walk up looks for .git no further than the
// user's home (a home that is a repository of dotfiles, whose .gitignore
// is "*", does not make every workspace in it a package of it), and a
// workspace that holds .git is its repository's top: nothing above
// applies.
func TestCheckpointAppliesNoGitignoreAboveTheHomeOrTheRepository(t *testing.T) {
	r, _, _ := newWorkspace(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	writeTree(t, home, tree{".git/HEAD": "ref\n", ".gitignore": "*\n", "proj/a.txt": "a\n"})
	_, m, err := r.CreateCheckpoint("c", filepath.Join(home, "proj"), "", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(fileNames(m), " "); got != "a.txt" {
		t.Errorf("a checkpoint of ~/proj holds %q, want a.txt: ~/.gitignore is not its", got)
	}
	repo := t.TempDir()
	writeTree(t, repo, tree{".git/HEAD": "ref\n", ".gitignore": "*.log\n", "app/.git/HEAD": "ref\n", "app/x.log": "x\n"})
	_, m, err = r.CreateCheckpoint("d", filepath.Join(repo, "app"), "", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(fileNames(m), " "); got != "x.log" {
		t.Errorf("a checkpoint of a repository inside another holds %q, want x.log", got)
	}
}

// A checkpoint of /repo/app applies /repo/.gitignore as git does. Each
// expectation is what `git ls-files --others --exclude-standard` printed
// in app for the same tree and patterns (git 2.x, by hand), and what the
// real rook took (checkpoint, then restore --to).
func TestCheckpointAppliesTheGitignoreAboveAsGitDoes(t *testing.T) {
	files := []string{"a.js", "b.txt", "sub/c.txt", "keep/d.txt"}
	for _, c := range []struct{ above, want string }{
		{"/*\n!/app\n", "a.js b.txt keep/d.txt sub/c.txt"},
		{"*\n!*/\n!*.js\n", "a.js"},
		{"/*\n!/app/\n", "a.js b.txt keep/d.txt sub/c.txt"},
		{"app/*\n!app/keep/\n", "keep/d.txt"},
		{"*.txt\n!app/**/*.txt\n", "a.js b.txt keep/d.txt sub/c.txt"},
	} {
		r, _, _ := newWorkspace(t)
		repo := t.TempDir()
		if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		tr := tree{".gitignore": c.above}
		for _, f := range files {
			tr["app/"+f] = "x\n"
		}
		writeTree(t, repo, tr)
		_, m, err := r.CreateCheckpoint("c", filepath.Join(repo, "app"), "", DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(fileNames(m), " "); got != c.want {
			t.Errorf("/repo/.gitignore %q: a checkpoint of /repo/app holds %q, git leaves %q", c.above, got, c.want)
		}
	}
}

// The user runs `rook checkpoint create` in /repo/app, a package of a
// monorepo (/repo/.git, /repo/.gitignore holding "*.log"), and app holds
// a nested git repository, app/vendor/lib (its own .git: a clone, a
// vendored library), whose file x.log its own repository does not ignore.
// It did: x.log was left out of the checkpoint, silently, so a restore did
// not bring it back (before 2c00e15 it was taken). Now: git applies a
// repository's .gitignore only inside that repository (`git -C
// /repo/app/vendor/lib status --ignored` lists x.log as untracked, and
// /repo's git does not look into the nested repository): the patterns of
// the .gitignore files above the workspace stop at a directory holding
// .git (Ignore.addRepo), in the walk and with --path below it. Those of
// the workspace's own .gitignore files still apply inside it, as they
// always did (vendor/lib/y.tmp).
func TestCheckpointAppliesNoGitignoreAboveInsideANestedRepository(t *testing.T) {
	r, _, _ := newWorkspace(t)
	repo := t.TempDir()
	for _, d := range []string{".git", "app/vendor/lib/.git"} {
		if err := os.MkdirAll(filepath.Join(repo, filepath.FromSlash(d)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeTree(t, repo, tree{
		".gitignore":            "*.log\n",
		"app/.gitignore":        "*.tmp\n",
		"app/main.js":           "main\n",
		"app/debug.log":         "log\n",
		"app/vendor/lib/x.log":  "the library's own file\n",
		"app/vendor/lib/lib.js": "lib\n",
		"app/vendor/lib/y.tmp":  "tmp\n",
		"app/vendor/z.log":      "log\n",
	})
	app := filepath.Join(repo, "app")
	_, m, err := r.CreateCheckpoint("c", app, "", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(fileNames(m), " ")
	if want := ".gitignore main.js vendor/lib/lib.js vendor/lib/x.log"; got != want {
		t.Errorf("a checkpoint of /repo/app holds %q, want %q: /repo/.gitignore's *.log does not apply inside the nested repository vendor/lib (git: x.log is untracked there, not ignored)", got, want)
	}
	_, m, err = r.CreateCheckpoint("d", app, "vendor/lib", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(fileNames(m), " "), "vendor/lib/lib.js vendor/lib/x.log"; got != want {
		t.Errorf("a checkpoint of /repo/app --path vendor/lib holds %q, want %q", got, want)
	}
	_, m, err = r.CreateCheckpoint("e", filepath.Join(app, "vendor"), "", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(fileNames(m), " "), "lib/lib.js lib/x.log lib/y.tmp"; got != want {
		t.Errorf("a checkpoint of /repo/app/vendor holds %q, want %q", got, want)
	}
}

// The diff's walk for files added under a directory captured whole
// applied the .gitignore files above the workspace as a checkpoint does
// (not inside a nested repository). It applies none now: the session
// capture of the directory applied none, so what it would have taken is
// added, ignored or not, in a nested repository or not.
func TestDiffOfCapturedDirectoryAppliesNoGitignore(t *testing.T) {
	r, _, _ := newWorkspace(t)
	repo := t.TempDir()
	for _, d := range []string{".git", "app/vendor/lib/.git"} {
		if err := os.MkdirAll(filepath.Join(repo, filepath.FromSlash(d)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeTree(t, repo, tree{".gitignore": "*.log\n", "app/vendor/lib/lib.js": "lib\n"})
	app := filepath.Join(repo, "app")
	s, err := r.NewSession("edit", app, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"vendor", "vendor/lib/sub"} {
		if _, _, err := r.CaptureSession(s.ID, []string{p}, "write", DefaultLimits); err != nil {
			t.Fatal(err)
		}
	}
	writeTree(t, repo, tree{"app/vendor/z.log": "z\n", "app/vendor/lib/x.log": "x\n", "app/vendor/lib/sub/y.log": "y\n"})
	d, err := r.Diff(s.ID, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	var added []string
	for _, f := range d.Files {
		if f.Status == "added" {
			added = append(added, f.Path)
		}
	}
	if got, want := strings.Join(added, " "), "vendor/lib/sub/y.log vendor/lib/x.log vendor/z.log"; got != want {
		t.Errorf("diff shows %q added, want %q: the capture of vendor applied no .gitignore, so neither does the search for what was added", got, want)
	}
}

// The user, about to run a risky `git rebase` or `git filter-repo`, backs
// up the repository's git directory: `cd /repo/.git && rook checkpoint
// create before-rebase`, /repo/.gitignore holding "logs" and "*.log" (the
// Node.js template's lines). It did: .git/logs (the reflogs, what recovers
// a lost commit) was left out of the checkpoint, silently, where before
// 2c00e15 it was taken. Now: git applies no .gitignore inside its own
// .git directory (there, `git status` says "this operation must be run
// in a work tree"): a workspace in the git directory (.git, or a
// directory in it) has no .gitignore above applied (gitignoresAbove).
func TestCheckpointOfTheGitDirectoryKeepsItsLogs(t *testing.T) {
	r, _, _ := newWorkspace(t)
	repo := t.TempDir()
	writeTree(t, repo, tree{
		".gitignore":                "logs\n*.log\n",
		"a.txt":                     "a\n",
		".git/HEAD":                 "ref: refs/heads/main\n",
		".git/refs/heads/main":      "0123456789012345678901234567890123456789\n",
		".git/logs/HEAD":            "0000 0123 a <a@b> 1 +0000\tcommit (initial): x\n",
		".git/logs/refs/heads/main": "0000 0123 a <a@b> 1 +0000\tcommit (initial): x\n",
		".git/hooks/pre-commit.log": "a hook's log\n",
		".git/info/exclude":         "\n",
	})
	for _, c := range []struct{ ws, want string }{
		{".git", "logs/HEAD logs/refs/heads/main hooks/pre-commit.log"},
		{".git/logs", "HEAD refs/heads/main"},
	} {
		_, m, err := r.CreateCheckpoint("before-rebase", filepath.Join(repo, filepath.FromSlash(c.ws)), "", DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(fileNames(m), " ")
		for _, want := range strings.Fields(c.want) {
			if _, ok := m.Files[want]; !ok {
				t.Errorf("a checkpoint of /repo/%s left out %s (holds %s): /repo/.gitignore applies to the worktree, not to the git directory itself", c.ws, want, got)
			}
		}
	}
}

// A .gitignore above the workspace that cannot be read (the user is not
// its owner: /repo/.gitignore root's, mode 0600, the checkpoint taken as
// another user) did fail the checkpoint, "make it readable (chmod u+r),
// or remove it", advice the user may not be able to follow, where before
// 2c00e15 those files were not read at all. Now it is named in skipped
// and the checkpoint goes on without its patterns. One in the workspace
// still fails the checkpoint (its patterns not applied, what they leave
// out, a secret, would be captured).
func TestCheckpointNamesAGitignoreAboveItCannotRead(t *testing.T) {
	if !notRoot(t) {
		return
	}
	r, _, _ := newWorkspace(t)
	repo := t.TempDir()
	writeTree(t, repo, tree{".git/HEAD": "ref\n", ".gitignore": "*.log\n", "app/a.txt": "a\n", "app/x.log": "x\n"})
	above := filepath.Join(repo, ".gitignore")
	if err := os.Chmod(above, 0); err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(repo, "app")
	_, m, err := r.CreateCheckpoint("c", app, "", DefaultLimits)
	if err != nil {
		t.Fatalf("checkpoint with %s unreadable: %v, want it taken, the file named", above, err)
	}
	if got := strings.Join(fileNames(m), " "); got != "a.txt x.log" {
		t.Errorf("files %q, want a.txt x.log (the patterns of %s not applied)", got, above)
	}
	want := above + " cannot be read: permission denied; above the workspace, its patterns are not applied"
	if !slices.Contains(m.Skipped, want) {
		t.Errorf("skipped %q, want %q", m.Skipped, want)
	}
	writeTree(t, repo, tree{"app/.gitignore": "*.tmp\n"})
	if err := os.Chmod(filepath.Join(app, ".gitignore"), 0); err != nil {
		t.Fatal(err)
	}
	_, _, err = r.CreateCheckpoint("d", app, "", DefaultLimits)
	var ge *GitignoreError
	if !errors.As(err, &ge) || ge.Path != ".gitignore" {
		t.Errorf("checkpoint with the workspace's .gitignore unreadable: %v, want a GitignoreError naming it", err)
	}
}
