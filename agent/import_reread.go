package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/rookhq/rook/cas"
)

// RereadReport says what Reread put back.
type RereadReport struct {
	Format   string         `json:"format"`
	Files    int            `json:"files"`            // transcript files read
	Objects  int            `json:"objects"`          // objects the files make
	Restored int            `json:"restored"`         // of those, stored copies that did not read and now do
	Failed   []ImportedFile `json:"failed,omitempty"` // files that could not be read
}

// Reread repairs damaged objects from the transcripts they were imported
// from: objects are content-addressed, so the bytes a file's import put
// are the bytes that repair them. Each chosen file is imported from its
// start into a scratch store beside the real one (not into the real one:
// its sessions are not written, and an import that reads a session whose
// objects are damaged stops there); then every object the scratch store
// holds whose id is in this store but does not read back is put again,
// which rewrites it (cas Put repairs an unreadable copy). No event,
// session, metadata or import state of this store is written, and an
// object this store does not hold is not added.
//
// What it cannot repair stays damaged: a file imported in several steps
// (it grew between imports) was cut into other objects than a whole
// import of it makes. `rook store verify` after says what is left.
//
// scratchMade, if not nil, is told the scratch directory as soon as it is
// made, empty, and its done is called once the directory is removed: the
// CLI removes it should rook be interrupted in between (a Ctrl-C ends
// rook at once, no defer run), as the scratch store holds as much as the
// files make.
func (r *Rook) Reread(opts ImportOptions, scratchMade func(dir string) (done func())) (rep RereadReport, err error) {
	rep.Format = opts.Format
	if opts.Format != FormatClaudeCode && opts.Format != FormatCodex {
		return rep, fmt.Errorf("unknown transcript format %q: use %s or %s", opts.Format, FormatClaudeCode, FormatCodex)
	}
	// The scratch store goes in the system's temporary directory, not in
	// the store's home: a crash leaves nothing a later rook would read.
	tmp, err := os.MkdirTemp("", "rook-reread-")
	if err != nil {
		return rep, fmt.Errorf("make a scratch store to read the transcripts into: %w", err)
	}
	done := func() {}
	if scratchMade != nil {
		done = scratchMade(tmp)
	}
	defer func() {
		os.RemoveAll(tmp)
		done()
	}()
	home := filepath.Join(tmp, "store")
	if _, err := cas.Init(r.fs, r.clock, home); err != nil {
		return rep, fmt.Errorf("make a scratch store in %s: %w", home, err)
	}
	scratch, err := Open(home, Options{FS: r.fs, Clock: r.clock, Writable: true, LockWait: time.Second})
	if err != nil {
		return rep, fmt.Errorf("open the scratch store %s: %w", home, err)
	}
	defer func() {
		if cerr := scratch.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close the scratch store %s: %w", home, cerr)
		}
	}()
	opts.Retention = nil
	irep, err := scratch.Import(opts)
	if err != nil {
		return rep, err
	}
	rep.Files = len(irep.Files)
	for _, f := range irep.Files {
		if f.Status == ImportFailed {
			rep.Failed = append(rep.Failed, f)
		}
	}
	objs, err := scratch.Store.List(0, 0)
	if err != nil {
		return rep, fmt.Errorf("list the scratch store's objects: %w", err)
	}
	rep.Objects = len(objs)
	for _, o := range objs {
		if _, gerr := r.Store.Get(o.ID); gerr == nil {
			continue
		} else if nf := (*cas.NotFoundError)(nil); errors.As(gerr, &nf) {
			continue // not this store's: nothing to repair
		} else if ce := (*cas.CorruptError)(nil); !errors.As(gerr, &ce) {
			return rep, gerr // the store itself fails (its index): not for a put to mend
		}
		data, gerr := scratch.Store.Get(o.ID)
		if gerr != nil {
			return rep, fmt.Errorf("read object %s back from the scratch store: %w", cas.Short(o.ID), gerr)
		}
		res, perr := r.Store.Put(o.Kind, data)
		if perr != nil {
			return rep, fmt.Errorf("put object %s back: %w", cas.Short(o.ID), perr)
		}
		if res.Repaired {
			rep.Restored++
		}
	}
	return rep, r.Store.Sync()
}
