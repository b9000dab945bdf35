package agent

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/rookhq/rook/agent/inbox"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/units"
	"github.com/rookhq/rook/internal/vfs"
)

// diskFree is vfs.DiskFree; a test makes a disk short of room.
var diskFree = vfs.DiskFree

// MaxTagLen bounds a session tag.
const MaxTagLen = 64

// ValidTag checks a session tag: tagShape's checks, and no character
// that is not seen where it stands (inbox.Unseen, judged by grapheme
// cluster: a bidi control, a zero-width space or other character that
// draws nothing alone, a joiner ending the tag). A tag is matched exactly
// (--rm, protect_tags): a right-to-left override or a zero-width space
// made a tag show as another, or as what it is not. Joiners and variation
// selectors inside a character that draws are taken: "❤️", "👨‍💻", Persian
// words with U+200C, Devanagari with U+200D show as what they are.
func ValidTag(t string) error {
	if err := tagShape(t); err != nil {
		return err
	}
	if c, why := inbox.Unseen(t); why != "" {
		return fmt.Errorf("tag %q has %U, a character that is not seen (%s): a tag would not show as it is", t, c, why)
	}
	return nil
}

// tagShape checks what every rook refused in a tag: empty, over
// MaxTagLen bytes, white space or a control character; and bytes that are
// not UTF-8 (stored as U+FFFD, which --rm of the same bytes did not
// find). A protect tag in config.toml is checked by it alone
// (LoadConfig): it only matches tags, and a file an older rook read is
// not refused for a character ValidTag now keeps out of new tags.
func tagShape(t string) error {
	if t == "" {
		return errors.New("a tag cannot be empty")
	}
	if len(t) > MaxTagLen {
		return fmt.Errorf("tag %q is %d bytes; at most %d", t, len(t), MaxTagLen)
	}
	if !utf8.ValidString(t) {
		return fmt.Errorf("tag %q is not UTF-8 text: give it in UTF-8", t)
	}
	for _, c := range t {
		if unicode.IsSpace(c) || unicode.IsControl(c) {
			return fmt.Errorf("tag %q has white space or a control character", t)
		}
	}
	return nil
}

// TagSession adds and removes tags in a session's metadata and returns the
// metadata written. Adding a tag the session has, or removing one it does
// not, changes nothing. A tag to remove need only not be empty: one a
// session holds from before ValidTag refused its kind is removed as it is.
func (r *Rook) TagSession(id eventlog.ID, add, remove []string) (eventlog.Meta, error) {
	for _, t := range add {
		if err := ValidTag(t); err != nil {
			return eventlog.Meta{}, err
		}
	}
	for _, t := range remove {
		if t == "" {
			return eventlog.Meta{}, errors.New("a tag cannot be empty")
		}
	}
	m, err := r.Log.ReadMeta(id)
	if err != nil {
		return m, err
	}
	tags := mergeTags(m.Tags, add, remove)
	if sameStrings(tags, m.Tags) {
		return m, nil
	}
	m.Tags = tags
	if len(tags) == 0 {
		m.Tags = nil
	}
	return m, r.Log.UpdateMeta(m)
}

// mergeTags is have with add appended and remove taken out, each tag
// once, in the order first given: a session's tags are a set (--rm takes
// a tag out once; session ls lists each once).
func mergeTags(have, add, remove []string) []string {
	tags := []string{}
	drop := map[string]bool{}
	for _, t := range remove {
		drop[t] = true
	}
	seen := map[string]bool{}
	for _, t := range append(append([]string(nil), have...), add...) {
		if !seen[t] && !drop[t] {
			seen[t] = true
			tags = append(tags, t)
		}
	}
	return tags
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// SessionRef names a session retention deleted (or, in a dry run, would).
type SessionRef struct {
	ID      eventlog.ID `json:"id"`
	Title   string      `json:"title"`
	Updated time.Time   `json:"updated"`
	Events  uint64      `json:"events"`
	Reason  string      `json:"reason"`
}

// PruneReport says what a prune deleted, or would.
type PruneReport struct {
	DryRun          bool         `json:"dry_run"`
	SessionsDeleted int          `json:"sessions_deleted"`
	EventsDeleted   uint64       `json:"events_deleted"`
	Protected       int          `json:"protected"` // kept by a protect tag, or an inbox or MCP server's session, or with one (ProtectedWith) (counted in Kept too)
	Kept            int          `json:"kept"`
	Deleted         []SessionRef `json:"deleted"`
	// ProtectedWith are the sessions kept with a protected one (counted
	// in Protected), each with why: the subagents of a protected session
	// (keptSessions).
	ProtectedWith []SessionRef `json:"protected_with"`
}

// protected reports whether a session carries one of the protect tags
// (compared ignoring case: a protection must not miss "Keep").
func (p RetentionPolicy) protected(tags []string) bool {
	for _, t := range tags {
		for _, pt := range p.ProtectTags {
			if strings.EqualFold(t, pt) {
				return true
			}
		}
	}
	return false
}

// keeps reports whether retention must keep a session whatever its age or
// rank: one with a protect tag, or a client's inbox or an MCP server's
// session (found as `rook inbox` and `rook mcp` find them), which hold the
// notes the user saved and the servers they set up, not history that ages.
func (p RetentionPolicy) keeps(s eventlog.Summary) bool {
	if p.protected(s.Tags) {
		return true
	}
	if _, ok := taggedName(s.Meta, inboxTag, true); ok {
		return true
	}
	_, ok := taggedName(s.Meta, "mcp", true)
	return ok
}

// keptSessions are the sessions of all that retention keeps whatever
// their age or rank, each with why: "" for one keeps keeps for itself,
// and a reason for a subagent kept with one. An imported subagent's
// session (isSubagent: a Claude Code Task's, a Codex spawn_agent's) is
// its parent's: the parent's Task result links to it, and a rewind or
// diff of the parent reads the subagent's edits from it (family.go), so
// deleting it breaks the session the user protected (a rewind to before
// the Task refuses). A session kept is kept with its subagents, theirs
// (a subagent may spawn its own), and so on down. A fork made in rook
// (session fork, a rewind) of a protected session is not protected by
// it: its copy holds the events it needs, and it is the user's to keep
// or not. A protected rook fork, though, holds copies of the events of
// its line up to the imported session it comes from, Task results
// naming that session's subagents, which its rewind and diff read as
// that session's do: those subagents are kept with the fork (the
// session itself is not: the fork's copy holds its events). So it is for
// a protected imported session that begins with a copy of its parent's
// lines (a Claude Code or Codex fork, a continuation: copiedLineFrom),
// whose diff reads the subagents the copied Task results name from the
// parent's children: the subagents of the sessions up its line are kept
// with it, not those sessions (its own tags protect it, not theirs).
func (p RetentionPolicy) keptSessions(all []eventlog.Summary) map[eventlog.ID]string {
	byID := make(map[eventlog.ID]eventlog.Summary, len(all))
	for _, s := range all {
		byID[s.ID] = s
	}
	kept := map[eventlog.ID]string{}
	// holder[id]: the protected session whose protection keeps the
	// subagents of session id (which may be gone: a rook fork's parent
	// removed).
	holder := map[eventlog.ID]eventlog.ID{}
	for _, s := range all {
		if !p.keeps(s) {
			continue
		}
		kept[s.ID] = ""
		holder[s.ID] = s.ID
		// Up the line of the sessions each copy comes from (as
		// importedFamilyOf goes), maxFamily at most: damaged metadata
		// looping is not followed forever.
		m := s.Meta
		for range maxFamily {
			next := false
			for _, up := range copiedLineFrom(m) {
				if has(holder, up) {
					continue
				}
				holder[up] = s.ID
				if u, there := byID[up]; there && !next {
					m, next = u.Meta, true
				}
			}
			if !next {
				break
			}
		}
	}
	// Down the parent links of the subagents, a level a pass.
	for more := true; more; {
		more = false
		for _, s := range all {
			if has(kept, s.ID) || s.Parent == nil || !isSubagent(s.Meta) {
				continue
			}
			h, ok := holder[*s.Parent]
			if !ok {
				continue
			}
			kept[s.ID] = fmt.Sprintf("subagent of session %s, kept with protected session %s", s.Parent, h)
			if *s.Parent == h {
				kept[s.ID] = fmt.Sprintf("subagent of protected session %s", h)
			}
			holder[s.ID] = h
			more = true
		}
	}
	return kept
}

// copiedLineFrom are the sessions whose events m's begin with a copy of,
// Task results (spawn_agent outputs) naming their subagents among them,
// which m's diff and rewind read as those sessions' do (importedFamilyOf,
// diffSubagents): of a fork made in rook, the session its ForkedFrom
// names; of an imported session that copies its parent's lines
// (copiesParent: a Claude Code forkedFrom fork or continuation, a Codex
// forked_from_id fork or subagent spawned with its parent's history),
// its parent, and once that is removed, its Ancestor (what its parent
// had copied), as importedFamilyOf takes both. None for another session:
// a subagent that copied nothing, or a session of its own.
func copiedLineFrom(m eventlog.Meta) []eventlog.ID {
	if m.Source == nil {
		if up, _, ok := m.ForkedFrom(); ok {
			return []eventlog.ID{up}
		}
		return nil
	}
	if m.Parent == nil || !copiesParent(m) {
		return nil
	}
	if m.Ancestor != nil {
		return []eventlog.ID{*m.Parent, *m.Ancestor}
	}
	return []eventlog.ID{*m.Parent}
}

// sessionsNewestFirst lists every session, the most recently touched
// first (ties: the newer id first).
func (r *Rook) sessionsNewestFirst() ([]eventlog.Summary, error) {
	all, err := r.Log.Sessions()
	if err != nil {
		return nil, err
	}
	sort.SliceStable(all, func(i, j int) bool {
		if ti, tj := touched(all[i]), touched(all[j]); !ti.Equal(tj) {
			return ti.After(tj)
		}
		return all[i].ID.String() > all[j].ID.String()
	})
	return all, nil
}

// touched is when a session was last worked on, what retention ranks
// sessions by (max_sessions keeps the newest, the budget deletes the
// oldest first): its last event, or, for a session made in this store
// whose events are older than it (a fork or rewind copies its parent's
// events, times and all), its creation: the fork made a moment ago is the
// session the user touched last, not one as old as its parent's event it
// was cut at. An imported session ranks by its transcript's own times: an
// import of last year's history is old work, and must not push out the
// sessions made before it (its age, though, counts from the import:
// lastWritten).
func touched(s eventlog.Summary) time.Time {
	if s.Source != nil {
		return s.Updated
	}
	return lastWritten(s)
}

func ref(s eventlog.Summary, reason string) SessionRef {
	return SessionRef{ID: s.ID, Title: s.Title, Updated: touched(s), Events: s.Events, Reason: reason}
}

// lastWritten is when rook last wrote a session: the latest of its last
// event, its creation, and the last import that appended to it (Written).
// They differ for a session whose events carry times from before they came
// into this store: one imported from another agent's transcript (events at
// the transcript's own times, the session created by the import, and
// appended to by the imports of the file as it grew) or a fork (its
// parent's events copied). Retention ages a session by this, so importing
// last year's history, or the new lines of a transcript resumed today, or
// forking an old session, is not undone by the next maintain.
func lastWritten(s eventlog.Summary) time.Time {
	t := s.Updated
	for _, w := range []time.Time{s.Created, s.Written} {
		if w.After(t) {
			t = w
		}
	}
	return t
}

// Prune applies the retention policy to the sessions. Going from the most
// recently touched session to the least, it deletes a session that rook has
// not written for MaxSessionAgeDays (lastWritten), and one beyond the first
// MaxSessions kept; a session with a protect tag is never deleted (nor
// any keptSessions keeps: its subagents with it, listed in ProtectedWith),
// and counts toward MaxSessions where the walk meets it: a protected session
// among the newest takes a place, an older one is kept beyond the limit
// (store_prune.txtar: kept 3 with max_sessions = 2). A dry run deletes
// nothing. The sessions'
// objects stay in the store until gc.
func (r *Rook) Prune(p RetentionPolicy, dryRun bool) (PruneReport, error) {
	rep := PruneReport{DryRun: dryRun, Deleted: []SessionRef{}, ProtectedWith: []SessionRef{}}
	all, err := r.sessionsNewestFirst()
	if err != nil {
		return rep, err
	}
	maxAge, maxN := Limit(p.MaxSessionAgeDays), Limit(p.MaxSessions)
	// An age beyond what a Duration holds (about 292 years) would wrap
	// around and put the cutoff in the future, deleting every session; no
	// session is that old, so such a limit deletes none.
	if int64(maxAge) > math.MaxInt64/int64(24*time.Hour) {
		maxAge = 0
	}
	cutoff := r.clock.Now().Add(-time.Duration(maxAge) * 24 * time.Hour)
	var doomed []SessionRef
	kept := p.keptSessions(all)
	for _, s := range all {
		why, keep := kept[s.ID]
		switch {
		case keep:
			rep.Protected++
			rep.Kept++
			if why != "" {
				rep.ProtectedWith = append(rep.ProtectedWith, ref(s, why))
			}
		case maxAge > 0 && lastWritten(s).Before(cutoff):
			doomed = append(doomed, ref(s, fmt.Sprintf("not updated in %d days", maxAge)))
		case maxN > 0 && rep.Kept >= maxN:
			doomed = append(doomed, ref(s, fmt.Sprintf("beyond the newest %d sessions", maxN)))
		default:
			rep.Kept++
		}
	}
	if dryRun {
		for _, d := range doomed {
			rep.SessionsDeleted++
			rep.EventsDeleted += d.Events
		}
		rep.Deleted = append(rep.Deleted, doomed...)
		return rep, nil
	}
	rm := sessionRemover{r: r}
	for _, d := range doomed {
		n, err := rm.remove(d.ID)
		if err != nil {
			return rep, fmt.Errorf("delete session %s: %w", d.ID, err)
		}
		d.Events = n
		rep.SessionsDeleted++
		rep.EventsDeleted += n
		rep.Deleted = append(rep.Deleted, d)
	}
	return rep, nil
}

// MaintainReport says what each stage of Maintain did, or would.
type MaintainReport struct {
	DryRun  bool              `json:"dry_run"`
	Prune   PruneReport       `json:"prune"`
	GC      cas.GCReport      `json:"gc"`
	Trained []cas.TrainResult `json:"trained"`
	// The budget stage: rounds of deleting the oldest unprotected sessions
	// and collecting again, while the store is over MaxTotalBytes.
	Budget        int64          `json:"budget"` // 0: none
	BudgetRounds  int            `json:"budget_rounds"`
	BudgetDeleted []SessionRef   `json:"budget_deleted"`
	BudgetGC      []cas.GCReport `json:"budget_gc"`
	// BudgetRepackFirst: the budget stage packs the store (a repack:
	// small records packed together, recompressed) before it deletes a
	// session for bytes, and measures again: it deletes none for bytes
	// packing frees. A real run sets it when it repacked (BudgetRepack
	// says what that did); a dry run, which does not pack, when its plan
	// deletes sessions: those listed are then the most a real run
	// deletes, none if packing brings the store under the budget.
	BudgetRepackFirst bool              `json:"budget_repack_first"`
	BudgetRepack      *cas.RepackReport `json:"budget_repack"`
	OverBudgetBy      int64             `json:"over_budget_by"`
	// OverBudgetStuck: the store stays (in a dry run: would stay) over
	// the budget with no session left that maintain may delete. Only the
	// user can bring it under (Notes says how): unlike bytes the gc grace
	// keeps, which a later run frees.
	OverBudgetStuck bool `json:"over_budget_stuck"`
	// LaterGCFrees: the stored bytes of unreachable objects younger than
	// the gc grace, which the first gc after it frees (in a dry run: would
	// be, after the plan). Counted as freed: a stuck store's OverBudgetBy
	// leaves them out, being what the user must free beside them.
	LaterGCFrees int64    `json:"later_gc_frees"`
	StoredBefore int64    `json:"stored_before"`
	StoredAfter  int64    `json:"stored_after"`
	Notes        []string `json:"notes"`

	// StuckOn, when OverBudgetStuck, is what holds the bytes left: the
	// ways out to say are those for what there is.
	StuckOn BudgetHolders `json:"-"`
}

// Maintain keeps the store within its policy: prune the sessions, collect
// what no session or ref reaches (cfg's gc grace), train a dictionary for
// each kind that has none, then, while the stored bytes exceed the budget,
// repack once (before the first session is deleted for bytes, so that
// none is for what packing frees), delete the oldest unprotected sessions
// a batch at a time and collect again. It stops under the budget or when nothing deletable is left, and
// says in Notes what it could not do.
//
// Unreachable objects younger than the gc grace count toward the budget as
// freed (see enforceBudget): within the grace, maintain deletes only what a
// run after it would.
//
// A dry run changes nothing: it plans the prune, estimates gc as it would
// be after that prune and training as it would be now, and plans the
// budget rounds, each from the gc plan without the sessions before it
// (planBudget).
//
// progress, if not nil, hears each stage ("prune", "gc: marking" then
// "gc", "train", "budget") and the stages' own progress: gc's mark counts
// sessions.
func (r *Rook) Maintain(cfg Config, dryRun bool, progress func(stage string, done, total int64)) (MaintainReport, error) {
	if progress == nil {
		progress = func(string, int64, int64) {}
	}
	stage := func(name string) func(done, total int64) {
		return func(done, total int64) { progress(name, done, total) }
	}
	pol := cfg.Storage.Retention
	grace := cfg.Storage.GCGrace.Duration
	rep := MaintainReport{DryRun: dryRun, Trained: []cas.TrainResult{}, BudgetDeleted: []SessionRef{}, BudgetGC: []cas.GCReport{}, Notes: []string{}, Budget: Limit(pol.MaxTotalBytes)}
	st, err := r.Store.Stats()
	if err != nil {
		return rep, err
	}
	rep.StoredBefore, rep.StoredAfter = st.Stored, st.Stored

	// A stage that fails after the ones before it changed the store (a
	// real run) says so: a *MaintainError with what was done.
	failed := func(stage string, err error) (MaintainReport, error) {
		if dryRun {
			return rep, err
		}
		return rep, &MaintainError{Stage: stage, Report: rep, Err: err}
	}

	progress("prune", 0, 0)
	if rep.Prune, err = r.Prune(pol, dryRun); err != nil {
		return failed(StagePrune, err)
	}

	progress("gc: marking", 0, 0)
	if dryRun {
		rep.GC, err = r.gcPlanWithout(rep.Prune.Deleted, grace, stage("gc: marking"), stage("gc"))
	} else {
		rep.GC, err = r.GC(grace, false, stage("gc: marking"), stage("gc"))
	}
	if err != nil {
		return failed(StageGC, fmt.Errorf("gc: %w", err))
	}

	progress("train", 0, 0)
	trained, err := r.Store.Train(cas.TrainOptions{OnlyMissing: true, DryRun: dryRun, Progress: stage("train")})
	rep.Trained = append(rep.Trained, trained...)
	if err != nil {
		return failed(StageTrain, fmt.Errorf("train dictionaries: %w", err))
	}
	if dryRun && len(rep.Prune.Deleted) > 0 {
		rep.Notes = append(rep.Notes, "the training estimate counts the objects of the sessions the prune would delete")
	}

	progress("budget", 0, 0)
	if dryRun {
		err = r.planBudget(&rep, pol, grace, stage("budget"))
	} else {
		err = r.enforceBudget(&rep, pol, grace, stage("budget"))
	}
	if err != nil {
		return failed(StageBudget, err)
	}
	if st, err = r.Store.Stats(); err != nil {
		return failed(StageStats, err)
	}
	rep.StoredAfter = st.Stored
	return rep, nil
}

// The stages of Maintain, as a MaintainError names them.
const (
	StagePrune  = "prune"
	StageGC     = "gc"
	StageTrain  = "train"
	StageBudget = "budget"
	StageStats  = "stats" // the stored size measured after every stage
)

// MaintainError: a stage of a (real) Maintain failed. The stages before
// it ran to their end, and what they did stays done: sessions deleted,
// objects collected, dictionaries trained. Report says what was done:
// the stages before Stage whole, and what Stage itself did before it
// failed (the sessions a prune or the budget stage deleted, the kinds
// trained); the stages after it did not run (their fields are zero).
type MaintainError struct {
	Stage  string
	Report MaintainReport
	Err    error
}

func (e *MaintainError) Error() string { return e.Err.Error() }
func (e *MaintainError) Unwrap() error { return e.Err }

// stageIndex orders the stages.
func stageIndex(stage string) int {
	return slices.Index([]string{StagePrune, StageGC, StageTrain, StageBudget, StageStats}, stage)
}

// Ran says whether stage ran to its end before the failure.
func (e *MaintainError) Ran(stage string) bool { return stageIndex(stage) < stageIndex(e.Stage) }

// DictionariesKept lists the kinds a dictionary was trained and kept for.
func (rep MaintainReport) DictionariesKept() []string {
	var kinds []string
	for _, t := range rep.Trained {
		if t.Kept {
			kinds = append(kinds, t.KindName)
		}
	}
	return kinds
}

// planBudget is the dry run's budget stage: the rounds a real run would
// make, each deleting the batch it would and planning gc as if that batch
// (and the prune's sessions) were gone. It does not pack as a real run
// does first: where it deletes sessions it says so (BudgetRepackFirst),
// the sessions listed being the most a real run deletes. It is an estimate: a real round's
// gc also recompresses what it moves, so the sessions listed are those the
// store's figures now point at.
func (r *Rook) planBudget(rep *MaintainReport, pol RetentionPolicy, grace time.Duration, progress func(done, total int64)) error {
	budget := rep.Budget
	if budget <= 0 || rep.StoredBefore <= budget {
		return nil
	}
	rep.OverBudgetBy = rep.StoredBefore - budget
	gone := map[eventlog.ID]bool{}
	deleted := append([]SessionRef(nil), rep.Prune.Deleted...)
	for _, d := range deleted {
		gone[d.ID] = true
	}
	// A real run packs before it deletes a session for bytes (as the
	// dry run does not): what the plan deletes is the most it would.
	// Said at the end of the note that lists the sessions' effect.
	packsFirst := func() {
		rep.BudgetRepackFirst = true
		rep.Notes[len(rep.Notes)-1] += "; a real run repacks the store first (packing small records together) and measures again before it deletes a session for the budget: the sessions listed are the most it would delete, none if packing brings the store within the budget"
	}
	g := rep.GC
	for {
		// What the store would hold after gc, and once the grace passes.
		stored := rep.StoredBefore - g.CollectableStored
		freeable := stored - g.TooNewStored
		if freeable <= budget {
			switch {
			case rep.BudgetRounds > 0:
				rep.Notes = append(rep.Notes, fmt.Sprintf("the store is %s over the %s budget; after the prune, gc and deleting the %d session(s) listed it would hold about %s, within it (an estimate: each round of a real run deletes by what its gc frees)",
					units.Bytes(rep.OverBudgetBy), units.Bytes(budget), len(rep.BudgetDeleted), units.Bytes(freeable)))
				packsFirst()
			default:
				rep.Notes = append(rep.Notes, fmt.Sprintf("the store is %s over the %s budget; after the prune and gc it would hold about %s, within it",
					units.Bytes(rep.OverBudgetBy), units.Bytes(budget), units.Bytes(freeable)))
			}
			if stored > budget {
				rep.LaterGCFrees = g.TooNewStored
				rep.Notes = append(rep.Notes, fmt.Sprintf("until the gc grace (%s) passes it would hold about %s: %s of it would be unreachable objects younger than the grace, which a gc after it frees",
					grace, units.Bytes(stored), units.Bytes(g.TooNewStored)))
			}
			return nil
		}
		all, err := r.sessionsNewestFirst()
		if err != nil {
			return err
		}
		// Not the protected sessions, nor their subagents (keptSessions).
		var cands []eventlog.Summary // oldest first
		kept := pol.keptSessions(all)
		for i := len(all) - 1; i >= 0; i-- {
			if gone[all[i].ID] {
				continue
			}
			if !has(kept, all[i].ID) {
				cands = append(cands, all[i])
			}
		}
		if len(cands) == 0 {
			rep.OverBudgetStuck = true
			var left []eventlog.Summary
			for _, s := range all {
				if !gone[s.ID] {
					left = append(left, s)
				}
			}
			if rep.StuckOn, err = r.budgetHolders(left, kept, pol); err != nil {
				return err
			}
			// What the user must free, as the real run says it: not
			// the excess before the plan, which counts the sessions
			// planned deleted and what a later gc frees.
			rep.OverBudgetBy = freeable - budget
			rep.LaterGCFrees = g.TooNewStored
			rep.Notes = append(rep.Notes, fmt.Sprintf("would still be about %s over the %s budget%s: no session would be left that may be deleted; the rest would be %s (%s)",
				units.Bytes(rep.OverBudgetBy), units.Bytes(budget), laterGC(g, grace, stored, true), rep.StuckOn.what(), rep.StuckOn.SayWaysOut(WayOut.String)))
			if rep.BudgetRounds > 0 {
				packsFirst()
			} else {
				// As a real run does before it says so.
				rep.BudgetRepackFirst = true
				rep.Notes[len(rep.Notes)-1] += "; a real run repacks the store first (packing small records together) and measures again, which may bring it within the budget"
			}
			return nil
		}
		n, err := r.budgetBatch(cands, freeable-budget, gone)
		if err != nil {
			return fmt.Errorf("estimate what deleting sessions frees: %w", err)
		}
		rep.BudgetRounds++
		for _, s := range cands[:n] {
			gone[s.ID] = true
			d := ref(s, fmt.Sprintf("oldest while over the %s budget", units.Bytes(budget)))
			deleted = append(deleted, d)
			rep.BudgetDeleted = append(rep.BudgetDeleted, d)
		}
		if g, err = r.gcPlanWithout(deleted, grace, nil, progress); err != nil {
			return fmt.Errorf("gc: %w", err)
		}
		rep.BudgetGC = append(rep.BudgetGC, g)
	}
}

// laterGC says, after a stuck store's excess, that it counts what a
// later gc frees as freed: the unreachable objects g kept for being
// younger than the grace, and what the store holds (would hold) until
// then; "" when there are none.
func laterGC(g cas.GCReport, grace time.Duration, stored int64, dry bool) string {
	if g.TooNewStored <= 0 {
		return ""
	}
	if dry {
		return fmt.Sprintf(" once a gc after the gc grace (%s) frees %s of unreachable objects younger than it (until then it would hold about %s)",
			grace, units.Bytes(g.TooNewStored), units.Bytes(stored))
	}
	return fmt.Sprintf(" once a later gc frees %s: %d unreachable object(s) younger than the gc grace (%s), which the first `rook store gc` or maintain after it frees (the store holds %s until then)",
		units.Bytes(g.TooNewStored), g.TooNew, grace, units.Bytes(stored))
}

// BudgetHolders is what holds a store over its budget once no session is
// left that maintain may delete: the sessions left (all protected), the
// checkpoints, and any other ref file under refs/ (gc keeps what every
// one names: a file in refs/checkpoints that is no checkpoint's, say).
type BudgetHolders struct {
	Sessions, Checkpoints, OtherRefs int
	// Tags are the protect tags the sessions carry, sorted, as each
	// spells it (`rook session tag ID --rm` removes a tag by its exact
	// spelling, where protection ignores case). None when every session
	// is kept as an inbox or an MCP server's: untagging frees nothing.
	Tags []string
	// kept says what protects the sessions: the protect tags (where
	// there are any), "inboxes and MCP servers" when one has none of
	// them, and "subagents of protected sessions" when one is kept with
	// another (keptSessions).
	kept string
}

// budgetHolders counts what holds the store: sessions, all of them
// protected by pol (kept: keptSessions, which says which are kept with
// another), and the ref files.
func (r *Rook) budgetHolders(sessions []eventlog.Summary, kept map[eventlog.ID]string, pol RetentionPolicy) (BudgetHolders, error) {
	h := BudgetHolders{Sessions: len(sessions)}
	if len(sessions) > 0 {
		untagged, with := false, false
		for _, s := range sessions {
			tagged := false
			for _, t := range s.Tags {
				if pol.protected([]string{t}) {
					tagged = true
					if !slices.Contains(h.Tags, t) {
						h.Tags = append(h.Tags, t)
					}
				}
			}
			switch {
			case tagged:
			case kept[s.ID] != "":
				with = true // kept with a protected session, not by a tag of its own
			default:
				untagged = true
			}
		}
		// No protect tags (protect_tags = []): none is named, and every
		// session is kept as an inbox or an MCP server's.
		var what []string
		if len(pol.ProtectTags) > 0 {
			what = append(what, "tags "+strings.Join(pol.ProtectTags, ", "))
		}
		if untagged {
			what = append(what, "inboxes and MCP servers") // kept by keeps, not by a tag
		}
		if with {
			what = append(what, "subagents of protected sessions")
		}
		h.kept = strings.Join(what, "; ")
		slices.Sort(h.Tags)
	}
	seen := map[string]bool{}
	count := func(ref string) {
		if seen[ref] {
			return
		}
		seen[ref] = true
		if name, ok := strings.CutPrefix(ref, RefsDir+"/checkpoints/"); ok && checkpointName.MatchString(name) {
			h.Checkpoints++
		} else {
			h.OtherRefs++
		}
	}
	err := r.walkRefs(func(ref string, _ cas.Key) { count(ref) }, func(ref string, _ error) { count(ref) })
	return h, err
}

// what says what holds the store, each part only when there is one.
func (h BudgetHolders) what() string {
	var parts []string
	if h.Sessions > 0 {
		parts = append(parts, fmt.Sprintf("%d protected session(s) (%s)", h.Sessions, h.kept))
	}
	if h.Checkpoints > 0 {
		parts = append(parts, fmt.Sprintf("%d checkpoint(s)", h.Checkpoints))
	}
	if h.OtherRefs > 0 {
		parts = append(parts, fmt.Sprintf("%d other ref file(s) under %s/ (`rook checkpoint ls` names those in %s/checkpoints)", h.OtherRefs, RefsDir, RefsDir))
	}
	if len(parts) == 0 {
		return "objects no session or ref names, which gc did not free"
	}
	return joinList(parts, "and")
}

// A WayOut is one way the user brings a store stuck over its budget
// under it (BudgetHolders.WaysOut).
type WayOut int

const (
	RaiseBudget       WayOut = iota // raise max_total_bytes
	UntagSessions                   // remove the protect tags (BudgetHolders.Tags)
	RemoveCheckpoints               // `rook checkpoint rm`
	RemoveOtherRefs                 // remove the ref files no checkpoint command reads
)

// String is the way out in short, as maintain's note says it.
func (w WayOut) String() string {
	switch w {
	case RaiseBudget:
		return "raise max_total_bytes"
	case UntagSessions:
		return "untag sessions"
	case RemoveCheckpoints:
		return "`rook checkpoint rm` checkpoints"
	case RemoveOtherRefs:
		return "remove the other ref files"
	}
	return fmt.Sprintf("WayOut(%d)", int(w))
}

// WaysOut are how the user brings the store under its budget, for what
// there is: raising the budget, then a way for each holder there is (no
// checkpoint's rm in a store with none).
func (h BudgetHolders) WaysOut() []WayOut {
	ways := []WayOut{RaiseBudget}
	if len(h.Tags) > 0 {
		ways = append(ways, UntagSessions)
	}
	if h.Checkpoints > 0 {
		ways = append(ways, RemoveCheckpoints)
	}
	if h.OtherRefs > 0 {
		ways = append(ways, RemoveOtherRefs)
	}
	return ways
}

// SayWaysOut says the ways out as "a, b or c", each worded by say: the
// note's in short (WayOut.String), the CLI's with the commands and files.
func (h BudgetHolders) SayWaysOut(say func(WayOut) string) string {
	var ways []string
	for _, w := range h.WaysOut() {
		ways = append(ways, say(w))
	}
	return joinList(ways, "or")
}

// joinList joins parts as "a, b or c" (conj: "or", "and").
func joinList(parts []string, conj string) string {
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " " + conj + " " + parts[len(parts)-1]
}

// enforceBudget deletes the oldest unprotected sessions, a batch a round,
// and collects after each, while the store is over the budget. Before the
// first deletion (or before saying none may be deleted) it repacks the
// store, once, and measures again (BudgetRepackFirst): a session is not
// deleted for bytes packing frees; not on a disk without room for the
// repack's copy (a note says so). Objects gc
// found unreachable but kept for being younger than the grace (deleted by
// this run or an earlier one) count as freed: the first gc after the grace
// frees them, and deleting more sessions for their bytes would lose history
// for nothing (a maintain run again within the grace deletes no more).
func (r *Rook) enforceBudget(rep *MaintainReport, pol RetentionPolicy, grace time.Duration, progress func(done, total int64)) error {
	budget := rep.Budget
	if budget <= 0 {
		return nil
	}
	g := rep.GC // the last gc: what waits for the grace
	rm := sessionRemover{r: r}
	packTried := false
	for {
		st, err := r.Store.Stats()
		if err != nil {
			return err
		}
		if st.Stored <= budget {
			return nil
		}
		freeable := st.Stored - g.TooNewStored
		if freeable <= budget {
			rep.OverBudgetBy = st.Stored - budget
			rep.LaterGCFrees = g.TooNewStored
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s over the %s budget until a later gc: %d unreachable object(s) (%s stored) are younger than the gc grace (%s); the first `rook store gc` or maintain after it frees them, leaving about %s, so maintain deleted no more sessions for them",
				units.Bytes(rep.OverBudgetBy), units.Bytes(budget), g.TooNew, units.Bytes(g.TooNewStored), grace, units.Bytes(freeable)))
			return nil
		}
		if !packTried {
			// Pack before deleting any session for bytes (or saying
			// none may be): records appended one by one (hooks) take far
			// more than packed together, and a session deleted for what
			// packing frees is history lost for nothing. Once a run:
			// then measure again. A repack writes a copy of what is
			// stored before it deletes the old segments: on a disk
			// without that room it would fail, and the budget, set for
			// a disk running short, would never delete a session.
			packTried = true
			if free, _, ferr := diskFree(r.home); ferr == nil && free < uint64(st.Stored) {
				rep.Notes = append(rep.Notes, fmt.Sprintf("not repacked before deleting sessions for the budget: a repack writes a copy of the %s stored before it removes the old segments, and the disk has %s free", units.Bytes(st.Stored), units.Bytes(int64(free))))
			} else {
				rep.BudgetRepackFirst = true
				pr, err := r.Repack(progress)
				if err != nil {
					return fmt.Errorf("repack before deleting sessions for the budget: %w", err)
				}
				rep.BudgetRepack = &pr
				if g.TooNewStored > 0 {
					// Their stored size is what the repack made it now.
					if g, err = r.GC(grace, true, nil, nil); err != nil {
						return fmt.Errorf("gc: %w", err)
					}
				}
				continue
			}
		}
		over := freeable - budget
		all, err := r.sessionsNewestFirst()
		if err != nil {
			return err
		}
		// Not the protected sessions, nor their subagents (keptSessions).
		var cands []eventlog.Summary // oldest first
		kept := pol.keptSessions(all)
		for i := len(all) - 1; i >= 0; i-- {
			if !has(kept, all[i].ID) {
				cands = append(cands, all[i])
			}
		}
		if len(cands) == 0 {
			// What the user must free: the bytes the grace keeps are
			// freed by a later gc anyway, as the dry run plans them.
			rep.OverBudgetBy = freeable - budget
			rep.LaterGCFrees = g.TooNewStored
			rep.OverBudgetStuck = true
			if rep.StuckOn, err = r.budgetHolders(all, kept, pol); err != nil {
				return err
			}
			rep.Notes = append(rep.Notes, fmt.Sprintf("still %s over the %s budget%s: no session is left that may be deleted; the rest is %s (%s)",
				units.Bytes(rep.OverBudgetBy), units.Bytes(budget), laterGC(g, grace, st.Stored, false), rep.StuckOn.what(), rep.StuckOn.SayWaysOut(WayOut.String)))
			return nil
		}
		n, err := r.budgetBatch(cands, over, nil)
		if err != nil {
			return fmt.Errorf("estimate what deleting sessions frees: %w", err)
		}
		rep.BudgetRounds++
		for _, s := range cands[:n] {
			ev, err := rm.remove(s.ID)
			if err != nil {
				return fmt.Errorf("delete session %s: %w", s.ID, err)
			}
			s.Events = ev
			rep.BudgetDeleted = append(rep.BudgetDeleted, ref(s, fmt.Sprintf("oldest while over the %s budget", units.Bytes(budget))))
		}
		if g, err = r.GC(grace, false, nil, progress); err != nil {
			return fmt.Errorf("gc: %w", err)
		}
		rep.BudgetGC = append(rep.BudgetGC, g)
		after, err := r.Store.Stats()
		if err != nil {
			return err
		}
		if after.Stored-g.TooNewStored < freeable {
			continue // progress, now or once the grace passes: go on while over
		}
		// Nothing was freed or set to be freed. If the deleted sessions'
		// objects are merely shared with others, deleting more may help;
		// if gc found garbage but freed no bytes, deleting more sessions
		// would only lose history without freeing space.
		if g.Collectable > 0 {
			rep.OverBudgetBy = after.Stored - budget
			rep.Notes = append(rep.Notes, fmt.Sprintf("still %s over the %s budget: gc found %d collectable object(s) but freed no stored bytes; maintain stopped rather than delete more sessions",
				units.Bytes(rep.OverBudgetBy), units.Bytes(budget), g.Collectable))
			return nil
		}
	}
}

// budgetBatch is how many of the oldest unprotected sessions (cands,
// oldest first) one budget round deletes: oldest first, only until what
// they free covers over, at most a tenth of the candidates (the round's gc
// then measures what was freed, and the next round goes on from there),
// at least one. What a session frees is estimated as the stored bytes of
// the objects it reaches that no session kept and no ref reaches (the
// window of the tenth is marked as deleted): an object several sessions
// of the window share counts for the newest of them, as deleting the
// older ones alone does not free it (counted for the oldest, 90 old
// sessions sharing one large object took 90 rounds, one session each).
// One mark of the store, and each session of the window read once, a
// round. The average session's share sized the batch before: one large
// old session and small ones deleted two where the large one sufficed.
// gone are the sessions a dry run has planned deleted before this round
// (a real run's are gone), so that the plan takes the sessions the real
// run does.
func (r *Rook) budgetBatch(cands []eventlog.Summary, over int64, gone map[eventlog.ID]bool) (int, error) {
	limit := max(len(cands)/10, 1)
	skip := maps.Clone(gone)
	if skip == nil {
		skip = map[eventlog.ID]bool{}
	}
	for _, c := range cands[:limit] {
		skip[c.ID] = true
	}
	if err := r.Flush(); err != nil {
		return 0, err
	}
	live, _, err := r.Roots(skip, nil)
	if err != nil {
		return 0, err
	}
	// newest[k]: the newest session of the window reaching k, which
	// only no session kept reaches.
	newest := map[cas.Key]int{}
	for i, c := range cands[:limit] {
		reach, err := r.reach([]eventlog.ID{c.ID})
		if err != nil {
			return 0, err
		}
		for k := range reach {
			if !live[k] {
				newest[k] = i
			}
		}
	}
	frees := make([]int64, limit)
	for k, i := range newest {
		info, err := r.Store.StatEntry(k)
		if err != nil {
			return 0, err
		}
		frees[i] += info.Stored
	}
	return coverCount(over, limit, func(i int) (int64, error) { return frees[i], nil })
}

// coverCount is how many of the first sessions, each freeing own(i), cover
// over: the fewest whose sum reaches it, at most limit, at least one.
func coverCount(over int64, limit int, own func(i int) (int64, error)) (int, error) {
	var freed int64
	for i := 0; i < limit; i++ {
		b, err := own(i)
		if err != nil {
			return 0, err
		}
		if freed += b; freed >= over {
			return i + 1, nil
		}
	}
	return max(limit, 1), nil
}

// gcPlanWithout is a dry-run gc as it would run once the given sessions
// are deleted: their bodies count as garbage unless something else reaches
// them.
func (r *Rook) gcPlanWithout(gone []SessionRef, grace time.Duration, mark, progress func(done, total int64)) (cas.GCReport, error) {
	if len(gone) == 0 {
		return r.GC(grace, true, mark, progress)
	}
	if err := r.Flush(); err != nil {
		return cas.GCReport{}, err
	}
	skip := map[eventlog.ID]bool{}
	for _, g := range gone {
		skip[g.ID] = true
	}
	live, kept, err := r.Roots(skip, mark)
	if err != nil {
		return cas.GCReport{}, err
	}
	rep, err := r.Store.Collect(cas.GCOptions{Live: func(id cas.Key) bool { return live[id] }, Grace: grace, DryRun: true, Progress: progress})
	rep.KeptLogsWithoutMeta = kept
	if err != nil {
		return rep, err
	}
	return rep, r.sweepBeside(&rep, grace, true)
}
