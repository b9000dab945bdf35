package agent

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/rookhq/rook/eventlog"
)

// RewindReport says what a rewind did.
type RewindReport struct {
	Fork               eventlog.ID `json:"session"`
	Parent             eventlog.ID `json:"parent"`
	EventsKept         uint64      `json:"events_kept"`
	CheckpointsApplied int         `json:"checkpoints_applied"`
	FilesRestored      int         `json:"files_restored"`
	FilesRemoved       int         `json:"files_removed"`
	// BeforeSeq is the seq, on the fork, of the capture of the disk as it
	// was before the rewind wrote anything: rewinding the fork to it puts
	// the workspace back. Nil when no file was touched.
	BeforeSeq *uint64  `json:"before_seq,omitempty"`
	Undo      string   `json:"undo,omitempty"`
	Paths     []string `json:"paths"`
	KeepFiles bool     `json:"keep_files"`
}

// rewindPlan collects, for each path, the earliest capture at or after
// `to`: the content before the agent's first change past that point.
func (r *Rook) rewindPlan(id eventlog.ID, to, count uint64) (root string, changes []Change, applied int, err error) {
	seen := map[string]bool{}
	for from := to; from < count; {
		evs, err := r.Log.Read(id, from, 1024)
		if err != nil {
			return "", nil, 0, err
		}
		if len(evs) == 0 {
			break
		}
		for _, ev := range evs {
			if ev.Kind != eventlog.KindCheckpoint {
				continue
			}
			m, err := r.ReadManifest(ev.Body)
			if err != nil {
				return "", nil, 0, fmt.Errorf("checkpoint #%d cannot be read (%w): nothing changed", ev.Seq, err)
			}
			if root == "" {
				root = m.Root
			} else if filepath.Clean(m.Root) != filepath.Clean(root) {
				return "", nil, 0, fmt.Errorf("checkpoint #%d captured %s but earlier ones captured %s: nothing changed", ev.Seq, m.Root, root)
			}
			applied++
			for p, f := range m.Files {
				if !seen[p] {
					seen[p] = true
					changes = append(changes, Change{Path: p, File: f})
				}
			}
			for _, p := range m.Absent {
				if !seen[p] {
					seen[p] = true
					changes = append(changes, Change{Path: p, Remove: true})
				}
			}
		}
		from = evs[len(evs)-1].Seq + 1
	}
	return root, changes, applied, nil
}

// Rewind forks a session at `to` (the parent stays whole and readable) and,
// unless keepFiles, puts every file the session captured at or after `to`
// back as it was at its earliest such capture, removing files that did not
// exist then. Before writing, it captures the disk as it is now onto the
// fork, so the rewind itself can be undone: RewindReport.Undo.
//
// Everything is checked first (paths inside the workspace, captured copies
// readable, directories writable); if anything fails, nothing is written and
// no fork is made.
func (r *Rook) Rewind(id eventlog.ID, to uint64, keepFiles bool) (RewindReport, error) {
	rep := RewindReport{Parent: id, EventsKept: to, KeepFiles: keepFiles, Paths: []string{}}
	sum, err := r.Log.Summary(id)
	if err != nil {
		return rep, err
	}
	if to > sum.Events {
		return rep, fmt.Errorf("cannot rewind to %d: session %s has %d events (0 to %d)", to, id, sum.Events, sum.Events)
	}
	var plan *Plan
	var before *Manifest
	if !keepFiles {
		root, changes, applied, err := r.rewindPlan(id, to, sum.Events)
		if err != nil {
			return rep, err
		}
		rep.CheckpointsApplied = applied
		if len(changes) > 0 {
			if plan, err = r.planRestore(root, changes); err != nil {
				return rep, fmt.Errorf("%w: nothing changed", err)
			}
			for _, c := range plan.Changes {
				rep.Paths = append(rep.Paths, c.Path)
			}
			// The disk as it is now, hand edits included: the undo.
			c, err := r.newCapturer(root, Limits{MaxFiles: len(rep.Paths) + 1, MaxBytes: 1 << 40, MaxFileBytes: 1 << 40})
			if err != nil {
				return rep, err
			}
			c.linksAsIs = true
			c.m.Label = fmt.Sprintf("before rewind of %s to %d", id, to)
			for _, p := range rep.Paths {
				if err := c.addPath(p); err != nil {
					return rep, fmt.Errorf("capture %s before rewinding: %w: nothing changed", p, err)
				}
			}
			before = c.m
		}
	}
	title := strings.TrimSpace(fmt.Sprintf("%s @%d", sum.Title, to))
	fork, err := r.Log.Fork(id, to, eventlog.Meta{Title: title})
	if err != nil {
		return rep, err
	}
	rep.Fork = fork.ID
	if plan == nil {
		return rep, r.Flush()
	}
	seq, err := r.Append(fork.ID, Entry{Kind: eventlog.KindCheckpoint, Label: before.Label, Body: before.Encode()})
	if err != nil {
		return rep, fmt.Errorf("record the disk before rewinding (fork %s made, nothing written): %w", fork.ID, err)
	}
	rep.BeforeSeq = &seq
	rep.Undo = fmt.Sprintf("rook session rewind %s --to %d", fork.ID, seq)
	rep.FilesRestored, rep.FilesRemoved, err = plan.Apply()
	if err != nil {
		return rep, fmt.Errorf("%w; `%s` puts back what was there", err, rep.Undo)
	}
	return rep, nil
}

var _ = errors.New
