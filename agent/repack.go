package agent

import "github.com/rookhq/rook/cas"

// Repack rewrites every segment (cas.Store.Repack), the sessions and refs
// marked first (Roots): a segment whose records wait for a dictionary that
// cannot be loaded, the index naming no object in it, moves to torn/ as
// dead space only when every object they name is in the store. Otherwise
// one of those missing may be in its records (an index rebuilt without
// the dictionary cannot name them) and it is kept, waiting for the
// dictionary (cas.RepackReport.KeptNeedsDict).
func (r *Rook) Repack(progress func(done, total int64)) (cas.RepackReport, error) {
	if err := r.Flush(); err != nil {
		return cas.RepackReport{}, err
	}
	return r.Store.RepackWith(cas.RepackOptions{Progress: progress, NothingNamedMissing: r.nothingNamedMissing()})
}

// nothingNamedMissing says whether the mark (Roots) found every object the
// sessions and refs name in the store; false when it could not tell.
func (r *Rook) nothingNamedMissing() bool {
	if r.eventsDirThere() != nil {
		return false
	}
	_, _, err := r.Roots(nil, nil)
	return err == nil
}
