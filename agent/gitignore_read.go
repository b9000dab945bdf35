package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// maxGitignoreBytes bounds a .gitignore a capture reads. A real one is a
// few KiB; one past this is refused, not read: its patterns could not
// be applied, and what they leave out (a secret, a build cache) would be
// captured.
const maxGitignoreBytes = 4 << 20

// GitignoreError: a .gitignore whose patterns a tree capture must apply
// and cannot (larger than maxGitignoreBytes, or unreadable). The capture
// fails rather than take what it leaves out.
type GitignoreError struct {
	Path     string // as the user knows it: a workspace path, or absolute above the workspace
	TooLarge bool
	Err      error // why it could not be read, when not TooLarge
}

// Why says what is wrong with the file, without its name.
func (e *GitignoreError) Why() string {
	if e.TooLarge {
		return fmt.Sprintf("is larger than %d MiB, more than rook reads of a .gitignore", maxGitignoreBytes>>20)
	}
	err := e.Err
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is said once
	}
	return "cannot be read: " + err.Error()
}

func (e *GitignoreError) Error() string {
	fix := "make it readable (chmod u+r), or remove it"
	if e.TooLarge {
		fix = "make it smaller, or remove it"
	}
	return fmt.Sprintf("capture: %s %s, so its patterns cannot be applied (what they leave out would be captured): nothing saved; %s", e.Path, e.Why(), fix)
}

func (e *GitignoreError) Unwrap() error { return e.Err }

// gitignoreDir is a directory a .gitignore is read from: a walk's, opened
// without following a link (*os.Root), or one named by its path
// (pathDir).
type gitignoreDir interface {
	Lstat(name string) (fs.FileInfo, error)
	OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error)
}

// pathDir is the directory at an absolute path, as a gitignoreDir.
type pathDir string

func (d pathDir) Lstat(name string) (fs.FileInfo, error) {
	return os.Lstat(filepath.Join(string(d), name))
}

func (d pathDir) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(filepath.Join(string(d), name), flag, perm)
}

// readGitignore reads the .gitignore of dir, whose path is at, which the
// user knows as shown (the file's name, "sub/.gitignore"), the one way every capture
// and walk reads one. Not there: nil, "", nil. A link is not followed (git
// does not follow a .gitignore that is a link either), nor is a named
// pipe, a socket or a device opened (a pipe would wait for a writer,
// forever): nil and a note saying so, for the capture's skipped list; its
// patterns are not applied. A regular file is opened without following a
// link or waiting, read only if it is still the file the Lstat saw, and
// no further than maxGitignoreBytes; one past them, or one that cannot be
// read, is a *GitignoreError, whose Err names the file by its whole path
// (rootErrAt: an *os.Root's names it relative to dir, ".gitignore", which
// the advice on a refused permission would take as one in the directory
// rook was started in).
func readGitignore(dir gitignoreDir, at, shown string) ([]byte, string, error) {
	b, note, err := readGitignoreLook(dir, shown, true)
	var ge *GitignoreError
	if errors.As(err, &ge) && ge.Err != nil {
		ge.Err = rootErrAt(ge.Err, at)
	}
	return b, note, err
}

// readGitignoreLook is readGitignore; again: a .gitignore replaced while
// it is opened is looked at again (once), what is there now saying what
// to do.
func readGitignoreLook(dir gitignoreDir, shown string, again bool) ([]byte, string, error) {
	fi, err := dir.Lstat(".gitignore")
	if notExist(err) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", &GitignoreError{Path: shown, Err: err}
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, shown + ": a link, not followed (git does not follow a .gitignore that is a link either): its patterns are not applied", nil
	case !fi.Mode().IsRegular():
		return nil, fmt.Sprintf("%s: not a regular file (%s): its patterns are not applied", shown, fileKind(fi.Mode())), nil
	case fi.Size() > maxGitignoreBytes:
		return nil, "", &GitignoreError{Path: shown, TooLarge: true}
	}
	f, err := dir.OpenFile(".gitignore", os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	f, err = checkRegular(f, err, shown, fi)
	if notExist(err) {
		return nil, "", nil // removed since its Lstat
	}
	if errors.Is(err, errNowLink) || errors.As(err, new(*NotRegularError)) {
		if again {
			return readGitignoreLook(dir, shown, false)
		}
		err = errors.New("replaced twice while being read (a tool at work): run it again")
	}
	if err != nil {
		return nil, "", &GitignoreError{Path: shown, Err: err}
	}
	b, err := readOpened(f, maxGitignoreBytes, 0)
	if errors.Is(err, errLargerThan) {
		return nil, "", &GitignoreError{Path: shown, TooLarge: true}
	}
	if err != nil {
		return nil, "", &GitignoreError{Path: shown, Err: err}
	}
	return b, "", nil
}

// ignoreAbove is a .gitignore of a directory above the workspace, in the
// git repository holding it: Dir is the directory's path from the
// repository's top ("" for the top).
type ignoreAbove struct {
	Dir  string
	Data []byte
}

// gitignoresAbove reads the .gitignore files git applies to the workspace
// real (its path with links resolved) from the directories above it: when
// a directory above holds .git (the top of the repository the workspace
// is in: a package of a monorepo), those of the top and of each directory
// down to the workspace's parent. It returns the workspace's path from
// that top ("" when the workspace is not in a repository, or is its
// top, and then no files), the files, and notes on those not applied: a
// link, a named pipe, and one that cannot be read or is too large (a
// file above the workspace, which the user may not own or be able to
// change: named, and gone on without; before they were read at all, a
// checkpoint did not read them). The walk up stops at the workspace's own
// .git, at the user's home (not looked at: a home that is a repository, of
// dotfiles, does not make every workspace in it a package of it) and at
// the filesystem's root: no .git met, no .gitignore above applies. A
// workspace in the git directory itself (the repository's .git, or a
// directory in it) is in no worktree: git applies no .gitignore there,
// nor does the capture. These are the only files a capture reads outside
// the workspace.
func gitignoresAbove(real string) (string, []ignoreAbove, []string) {
	top, prefix, ok := repoTop(real)
	if !ok || top == real {
		return "", nil, nil
	}
	parts := strings.Split(prefix, "/")
	var files []ignoreAbove
	var notes []string
	dir := ""
	for _, part := range parts {
		abs := filepath.Join(top, filepath.FromSlash(dir))
		b, note, err := readGitignore(pathDir(abs), abs, filepath.Join(abs, ".gitignore"))
		var ge *GitignoreError
		if errors.As(err, &ge) {
			note = fmt.Sprintf("%s %s; above the workspace, its patterns are not applied", ge.Path, ge.Why())
		}
		if note != "" {
			notes = append(notes, note)
		}
		if b != nil {
			files = append(files, ignoreAbove{Dir: dir, Data: b})
		}
		dir = path.Join(dir, part)
	}
	return prefix, files, notes
}

// repoTop is the top of the git repository the workspace real is in (the
// nearest directory at or above it holding .git) and the workspace's path
// from it ("" at the top), as gitignoresAbove walks up: stopping at the
// user's home (a home that is a repository of dotfiles does not make every
// workspace in it a package of it) and at the filesystem's root. Not ok:
// no repository, or the workspace is in the git directory itself, where
// there is no worktree.
func repoTop(real string) (top, prefix string, ok bool) {
	home := ""
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) {
		if r, err := filepath.EvalSymlinks(h); err == nil {
			h = r
		}
		home = filepath.Clean(h)
	}
	for d := real; ; {
		if d != real && d == home {
			return "", "", false
		}
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			top = d
			break
		}
		up := filepath.Dir(d)
		if d == home {
			return "", "", false // the workspace is the home: nothing above it
		}
		if up == d {
			return "", "", false
		}
		d = up
	}
	if top == real {
		return top, "", true
	}
	rel, err := filepath.Rel(top, real)
	if err != nil {
		return "", "", false
	}
	prefix = filepath.ToSlash(rel)
	if slices.Contains(strings.Split(prefix, "/"), ".git") {
		return "", "", false // in the git directory: no worktree there
	}
	return top, prefix, true
}

// newIgnoreAbove returns an Ignore for the workspace at prefix in its
// repository, holding the patterns of the .gitignore files above it.
func newIgnoreAbove(prefix string, above []ignoreAbove) *Ignore {
	ig := NewIgnore()
	for _, f := range above {
		ig.addAt(f.Dir, f.Data)
	}
	ig.base = prefix
	return ig
}

// holdsGit says whether the directory abs holds .git (a directory, or a
// file, as a submodule's or a worktree's is): the top of a repository,
// as gitignoresAbove takes one.
func holdsGit(abs string) bool {
	_, err := os.Lstat(filepath.Join(abs, ".git"))
	return err == nil
}

// hasGitEntry is holdsGit of a directory listed as ents.
func hasGitEntry(ents []fs.DirEntry) bool {
	for _, e := range ents {
		if e.Name() == ".git" {
			return true
		}
	}
	return false
}
