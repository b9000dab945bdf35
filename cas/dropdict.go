package cas

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// DictionaryMayHold is a dictionary a gc says may hold pieces of the
// objects it collected (GCReport.DictionariesMayHold): one of their kind
// trained once one of them was in the store (a dictionary is trained from
// a sample of its kind's objects, and learns what recurs in them, secrets
// too). Dropping it (`rook store repack --drop-dictionary ID`) removes it.
type DictionaryMayHold struct {
	ID   uint32 `json:"id"`
	Kind string `json:"kind"` // "" when its file is damaged: its kind is not known
	File string `json:"file"`
}

// dictionariesMayHold lists the dictionaries that may hold pieces of
// collected objects: deadSince[kind] is the oldest created time (unix
// seconds) of a collected object of kind. A dictionary of that kind
// created at or after it may have sampled one; a damaged one (kind and
// time unknown) may, when anything was collected; a dictionary being
// dropped is listed too (its drop was cut short).
func (s *Store) dictionariesMayHold(deadSince map[Kind]int64) []DictionaryMayHold {
	if s.dicts == nil || len(deadSince) == 0 {
		return nil
	}
	var out []DictionaryMayHold
	for _, in := range s.dicts.List() {
		if in.Damaged != "" {
			out = append(out, DictionaryMayHold{ID: in.ID, File: in.File})
			continue
		}
		since, ok := deadSince[Kind(in.Kind)]
		if ok && in.Created.Unix() >= since {
			out = append(out, DictionaryMayHold{ID: in.ID, Kind: Kind(in.Kind).String(), File: in.File})
		}
	}
	return out
}

// DropReport says what a repack that drops dictionaries did: the repack,
// the dictionaries deleted, those dropped before (nothing to do) and
// those refused (records still name them).
type DropReport struct {
	RepackReport
	Dropped        []uint32      `json:"dropped_dictionaries"`
	AlreadyDropped []uint32      `json:"already_dropped,omitempty"`
	Refused        []RefusedDrop `json:"refused_dictionaries,omitempty"`
	// Repacked: the repack ran (false when every id was dropped before:
	// RepackReport is then empty, no size of the store).
	Repacked bool `json:"-"`
}

// RefusedDrop is a dictionary a drop kept: records in Segments (kept in
// place by the repack: damaged, or waiting for another dictionary) still
// name it.
type RefusedDrop struct {
	ID       uint32   `json:"id"`
	Segments []string `json:"segments"`
}

// DropRefusedError says that records still name some of the dictionaries
// to drop (DropReport.Refused): the others were dropped, and the report
// says what the repack did.
type DropRefusedError struct{ msg string }

func (e *DropRefusedError) Error() string { return e.msg }

// DropDictionaries deletes the dictionaries ids: every record naming one
// is rewritten first. It is a repack (every segment rewritten, each live
// object recompressed with its kind's newest dictionary) in which these
// are no kind's newest (the kind's newest other one is used, or none);
// once the rewrite is durable (the index committed, the old segments
// gone), every segment left is read to check that no record names them
// (a segment kept for damage, or waiting for another dictionary, may);
// only then is each marked dropped and its file deleted (dict.Dir.Drop).
// A crash at any step leaves a dictionary's file, or no record naming it
// (docs/storage.md, Dictionaries). Its id is never given out again. A
// record still naming one refuses the drop of that one, naming the
// segments; the others go.
func (s *Store) DropDictionaries(ids []uint32, progress func(done, total int64)) (DropReport, error) {
	var rep DropReport
	if s.dicts == nil {
		return rep, errors.New("drop a dictionary: this store's dictionaries are not its dict/ directory's")
	}
	seen := map[uint32]bool{}
	var want []uint32
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		present, dropped := s.dicts.Known(id)
		if !present && dropped {
			rep.AlreadyDropped = append(rep.AlreadyDropped, id) // nothing to do
			continue
		}
		if !present {
			return rep, badDrop(fmt.Errorf("no dictionary %d in %s (`rook store stat` lists them): nothing rewritten", id, filepath.Join(s.home, DictDir)))
		}
		want = append(want, id)
	}
	slices.Sort(want)
	slices.Sort(rep.AlreadyDropped)
	if len(want) == 0 {
		return rep, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable(); err != nil {
		return rep, err
	}
	// Before the sync: what is pending is written with the kinds' newest
	// others, not these.
	s.dicts.Withhold(want)
	rr, err := s.repackLocked(progress)
	rep.RepackReport, rep.Repacked = rr, true
	if err != nil {
		return rep, fmt.Errorf("%w: no dictionary deleted", err)
	}
	// Every segment left, read: a record naming one keeps it.
	segs, err := s.listSegments()
	if err != nil {
		return rep, fmt.Errorf("%w: no dictionary deleted", err)
	}
	named := map[uint32][]string{}
	for _, n := range segs {
		damage, _, err := s.scanSegment(n, 0, func(r *scannedRecord) error {
			if seen[r.h.Dict] && !slices.Contains(named[r.h.Dict], segName(n)) {
				named[r.h.Dict] = append(named[r.h.Dict], segName(n))
			}
			return nil
		}, nil)
		if err != nil {
			return rep, fmt.Errorf("check that no record names the dictionaries to drop: segment %s: %w: no dictionary deleted", segName(n), err)
		}
		for _, d := range damage {
			if d.NeedsDict && seen[d.Dict] && !slices.Contains(named[d.Dict], segName(n)) {
				named[d.Dict] = append(named[d.Dict], segName(n))
			}
		}
	}
	var refused []string
	for _, id := range want {
		if segs := named[id]; len(segs) > 0 {
			refused = append(refused, fmt.Sprintf("dictionary %d is still named by records in %s (kept in place by the repack: see above), so it is kept", id, strings.Join(segs, ", ")))
			rep.Refused = append(rep.Refused, RefusedDrop{ID: id, Segments: segs})
			continue
		}
		if err := s.dicts.Drop(id); err != nil {
			return rep, err
		}
		s.enc.forget(id)
		rep.Dropped = append(rep.Dropped, id)
	}
	if len(refused) > 0 {
		return rep, &DropRefusedError{fmt.Sprintf("%s: `rook store verify` says what is wrong with those segments; once they are repaired (or their dictionary put back), drop it again", strings.Join(refused, "; "))}
	}
	return rep, nil
}

// badDrop marks a drop refused for its arguments (exit 2).
func badDrop(err error) error { return &BadDropError{err} }

// BadDropError: a dictionary to drop that is not there.
type BadDropError struct{ error }

func (e *BadDropError) Unwrap() error { return e.error }
