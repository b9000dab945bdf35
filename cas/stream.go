package cas

import (
	"encoding/hex"
	"io"
)

// streamMin is the object size from which WriteTo streams an object
// alone in its block instead of reading the record whole: below it, the
// block cache and one read are cheaper, and a packed block is at most a
// couple of MiB anyway.
const streamMin = 1 << 20

// WriteTo writes the object's bytes to w and returns how many it wrote.
// An object alone in a big record (a captured file of many MiB) is
// decompressed and hashed as it is read, in pieces, so that memory stays
// bounded whatever its size: Get holds the record, its decoded block and
// a copy. The bytes written are only known to be the object's once WriteTo
// returns nil: a record whose checksum, length or hash does not hold is a
// *CorruptError, found at its end, after w has had what was read. Callers
// that keep what they wrote (a file) must discard it on an error; a hash
// of it (a git blob id) is used only on success.
func (s *Store) WriteTo(id Key, w io.Writer) (int64, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0, ErrClosed
	}
	if o, ok := s.pending[id]; ok {
		data := o.data // never changed once held (PutOwned's contract)
		s.mu.Unlock()
		n, err := w.Write(data)
		return int64(n), err
	}
	s.mu.Unlock()
	e, ok, err := s.lookup(id)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, &NotFoundError{Prefix: hex.EncodeToString(id[:])}
	}
	if !e.Inline && e.Size >= streamMin {
		n, streamed, err := s.streamEntry(id, e, w)
		if streamed {
			return n, err
		}
	}
	b, err := s.Get(id)
	if err != nil {
		return 0, err
	}
	n, err := w.Write(b)
	return int64(n), err
}

// streamEntry streams an object that is alone in its record
// (ObjectReader.WriteTo). streamed is false when it is not (a packed
// block, or a record that cannot even be opened): nothing was written
// then, and Get reads it, with Get's errors and the stale-view retry of a
// reader.
func (s *Store) streamEntry(id Key, e entry, w io.Writer) (n int64, streamed bool, err error) {
	r := s.openAlone(id, e)
	if r == nil {
		return 0, false, nil
	}
	n, err = r.WriteTo(w)
	return n, true, err
}

// writeError marks an error from WriteTo's writer, not from the store:
// it is returned as it was, never as damage.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }

type callerWriter struct{ w io.Writer }

func (c callerWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil {
		err = &writeError{err}
	}
	return n, err
}
