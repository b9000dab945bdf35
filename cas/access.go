package cas

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rookhq/rook/dict"
)

// AccessProblem is a file of the store that its owner's mode bits, or an
// open of it, keep from being read (or, for the files a writer opens to
// write, written): a file a `sudo rook` or a hook run as another account
// made, a chmod by hand. Every command that needs it fails with
// "permission denied", and the user is sent to `rook doctor`, which must
// then name it.
type AccessProblem struct {
	Path string
	// What the file is and who needs it ("the newest segment, which every
	// command that writes appends to").
	What string
	// Mode: the file's permission bits; Write: a writer opens it to
	// write, so its owner needs rw, not only r.
	Mode  fs.FileMode
	Write bool
	// Err is the open's error, or nil when only the mode bits are wrong
	// (this process may open what its owner may not: root).
	Err error
}

func (p AccessProblem) Error() string {
	if p.Err != nil {
		why := p.Err
		if pe := (*fs.PathError)(nil); errors.As(why, &pe) && pe.Path == p.Path {
			why = pe.Err // the path is said already
		}
		return fmt.Sprintf("cannot open %s, %s: %v", p.Path, p.What, why)
	}
	need := "read"
	if p.Write {
		need = "read and write"
	}
	return fmt.Sprintf("%s, %s, has mode %04o: its owner may not %s it", p.Path, p.What, p.Mode.Perm(), need)
}

// CheckAccess says which of the files a writer opens (the lock, the index,
// the newest segment, the dictionaries and dict/HIGHEST) may not be opened
// as they must be: their owner's mode bits lack what a writer needs, or
// an open of them for reading fails. Each is opened and closed, never
// read: a few files whatever the store's size. A file that is not there is
// not this check's: the store's other checks say what its absence means.
// The mode bits of a writer's files are not checked in a home its owner
// may not write (a store made read-only on purpose): no writer opens it.
func (s *Store) CheckAccess() []AccessProblem {
	writable := true
	if st, err := s.fs.Stat(s.home); err == nil && st.Mode().Perm()&0o200 == 0 {
		writable = false
	}
	type file struct {
		path, what string
		write      bool
	}
	files := []file{
		{filepath.Join(s.home, LockFile), "the writer lock, which every command that writes opens", true},
		{s.indexPath(), "the index, which every command opens", true},
	}
	if segs, err := s.listSegments(); err == nil && len(segs) > 0 {
		files = append(files, file{s.segPath(segs[len(segs)-1]), "the newest segment, which every command that writes appends to", true})
	}
	dir := filepath.Join(s.home, DictDir)
	files = append(files, file{filepath.Join(dir, dict.HighestFile), "the record of the dictionary ids given out, which every command that writes reads", false})
	if ents, err := s.fs.ReadDir(dir); err == nil {
		var names []string
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".zdict") && !strings.HasPrefix(e.Name(), ".") {
				names = append(names, e.Name())
			}
		}
		sort.Strings(names)
		for _, n := range names {
			files = append(files, file{filepath.Join(dir, n), "a dictionary, which the objects compressed with it need", false})
		}
	}
	var out []AccessProblem
	for _, f := range files {
		st, err := s.fs.Stat(f.path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			out = append(out, AccessProblem{Path: f.path, What: f.what, Write: f.write, Err: err})
			continue
		}
		if !st.Mode().IsRegular() {
			continue // a directory in a file's place: the store's other checks
		}
		need := fs.FileMode(0o400)
		if f.write && writable {
			need = 0o600
		}
		p := AccessProblem{Path: f.path, What: f.what, Mode: st.Mode().Perm(), Write: f.write && writable}
		if h, err := s.fs.OpenFile(f.path, os.O_RDONLY, 0); err != nil {
			p.Err = err
		} else {
			h.Close()
			if st.Mode().Perm()&need == need {
				continue
			}
		}
		out = append(out, p)
	}
	return out
}
