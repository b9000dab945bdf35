package cli

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/cas"
)

// SessionTagCmd is `rook session tag`.
type SessionTagCmd struct {
	ID   string   `arg:"" help:"Session id, unique prefix, or last."`
	Tags []string `arg:"" optional:"" name:"tag" help:"Tags to add (with --rm: to remove); none prints the session's tags."`
	Rm   bool     `name:"rm" help:"Remove the tags instead of adding them."`
}

// sessionTagCommand is the `rook session tag` command advice names (rm:
// with --rm) for tags: each quoted for the shell, after `--` when one
// starts with '-', which the flag parser would otherwise read as a flag
// (`rook session tag ID -keep` failed: unknown flag -k).
func sessionTagCommand(rm bool, tags []string) string {
	cmd := "rook session tag ID"
	if rm {
		cmd += " --rm"
	}
	var args []string
	dash := false
	for _, t := range tags {
		dash = dash || strings.HasPrefix(t, "-")
		args = append(args, shellArg(t))
	}
	if dash {
		cmd += " --"
	}
	return cmd + " " + strings.Join(args, " ")
}

func (c *SessionTagCmd) Run(e *Env) error {
	for _, t := range c.Tags {
		// A tag to remove need only not be empty: one a session holds
		// from before ValidTag refused its kind (a bidi control) is
		// removed as it is; one it does not hold is a note.
		if c.Rm && t != "" {
			continue
		}
		if err := agent.ValidTag(t); err != nil {
			return usageErr("%v", err)
		}
	}
	if c.Rm && len(c.Tags) == 0 {
		return usageErr("--rm needs the tags to remove")
	}
	r, err := e.openRook(len(c.Tags) > 0)
	if err != nil {
		return err
	}
	id, err := e.sessionArg(r, c.ID)
	if err != nil {
		r.Close()
		return err
	}
	before, err := r.Log.ReadMeta(id)
	if err != nil {
		r.Close()
		return err
	}
	m := before
	if len(c.Tags) > 0 {
		if c.Rm {
			m, err = r.TagSession(id, nil, c.Tags)
		} else {
			m, err = r.TagSession(id, c.Tags, nil)
		}
	}
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	had := map[string]bool{}
	for _, t := range before.Tags {
		had[t] = true
	}
	has := map[string]bool{}
	for _, t := range m.Tags {
		has[t] = true
	}
	added, removed := []string{}, []string{}
	for _, t := range c.Tags {
		switch {
		case c.Rm && had[t] && !has[t]:
			removed = append(removed, t)
		case c.Rm:
			fmt.Fprintf(e.Stderr, "rook: note: session %s has no tag %q\n", id, t)
		case !had[t] && has[t]:
			added = append(added, t)
		}
	}
	tags := m.Tags
	if tags == nil {
		tags = []string{}
	}
	if e.JSON {
		return e.printJSON(map[string]any{"id": id, "tags": tags, "added": added, "removed": removed})
	}
	if len(tags) == 0 {
		fmt.Fprintf(e.Stdout, "session %s has no tags\n", id)
		return nil
	}
	// terminalLine: a tag a session holds from before ValidTag refused
	// bidi controls and the like must not act on the terminal.
	fmt.Fprintf(e.Stdout, "session %s tags: %s\n", id, terminalLine(strings.Join(tags, ", ")))
	return nil
}

// loadConfig reads $ROOK_HOME/config.toml (its errors name the file).
func (e *Env) loadConfig() (agent.Config, error) {
	return agent.LoadConfig(e.FS, e.Home)
}

// StorePruneCmd is `rook store prune`.
type StorePruneCmd struct {
	DryRun bool `name:"dry-run" help:"List what would be deleted; delete nothing."`
}

func (c *StorePruneCmd) Run(e *Env) error {
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	r, err := e.openRook(!c.DryRun)
	if err != nil {
		return err
	}
	rep, err := r.Prune(cfg.Storage.Retention, c.DryRun)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if !c.DryRun && rep.SessionsDeleted > 0 {
			return fmt.Errorf("%w (%d session(s) were deleted before it)", err, rep.SessionsDeleted)
		}
		return err
	}
	if e.JSON {
		return e.printJSON(rep)
	}
	if err := printPrune(e.Stdout, "", rep); err != nil {
		return err
	}
	if !c.DryRun && rep.SessionsDeleted > 0 {
		fmt.Fprintln(e.Stdout, "run `rook store gc` to reclaim the space")
	}
	return nil
}

func dryPrefix(dry bool) string {
	if dry {
		return "[dry run] "
	}
	return ""
}

// printPrune writes a prune's summary line and the sessions it deleted;
// a dry run, the plan the user reads before a real run, also lists the
// sessions kept with a protected one and why (a real run counts them:
// maintain, run daily, would list the same subagents each time).
func printPrune(w io.Writer, stage string, rep agent.PruneReport) error {
	with := ""
	if n := len(rep.ProtectedWith); n > 0 {
		with = fmt.Sprintf(" (%d with a protected session)", n)
	}
	fmt.Fprintf(w, "%s%ssessions deleted %d, events deleted %d, protected %d%s, kept %d\n",
		dryPrefix(rep.DryRun), stage, rep.SessionsDeleted, rep.EventsDeleted, rep.Protected, with, rep.Kept)
	if err := printSessionRefs(w, rep.Deleted); err != nil {
		return err
	}
	if !rep.DryRun || len(rep.ProtectedWith) == 0 {
		return nil
	}
	fmt.Fprintf(w, "%s%skept with a protected session:\n", dryPrefix(rep.DryRun), stage)
	return printSessionRefs(w, rep.ProtectedWith)
}

func printSessionRefs(w io.Writer, refs []agent.SessionRef) error {
	if len(refs) == 0 {
		return nil
	}
	t := &table{right: map[int]bool{3: true}}
	t.add("id", "title", "updated", "events", "reason")
	for _, s := range refs {
		title := s.Title
		if title == "" {
			title = "(untitled)"
		}
		t.add(s.ID.String(), clip(title, 40), shownTime(s.Updated), fmt.Sprint(s.Events), s.Reason)
	}
	return t.write(w)
}

// StoreMaintainCmd is `rook store maintain`.
type StoreMaintainCmd struct {
	DryRun bool `name:"dry-run" help:"Plan every stage; change nothing."`
}

// stagedProgress is a progress meter per stage of a long command.
type stagedProgress struct {
	w     io.Writer
	stage string
	p     *progress
}

// stageUnits are what a stage's progress counts, where not bytes.
var stageUnits = map[string]string{"train": "kinds", "gc: marking": "sessions"}

func (s *stagedProgress) update(stage string, done, total int64) {
	if stage != s.stage {
		s.done()
		s.stage, s.p = stage, newProgress(s.w, stage)
		s.p.unit = stageUnits[stage]
	}
	if total > 0 {
		s.p.update(done, total)
	}
}

func (s *stagedProgress) done() {
	if s.p != nil {
		s.p.done()
	}
}

func (c *StoreMaintainCmd) Run(e *Env) error {
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	// A dry run changes nothing, so it reads as any reader does: it
	// needed the writer lock, and failed while an import held it. What
	// a writer does meanwhile can make its plan stale; it says so.
	r, err := e.openRook(!c.DryRun)
	if err != nil {
		return err
	}
	p := &stagedProgress{w: e.Stderr}
	rep, err := r.Maintain(cfg, c.DryRun, p.update)
	p.done()
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if me := (*agent.MaintainError)(nil); errors.As(err, &me) {
		// What the stages before the failure did stays done (a prune's
		// deletes cannot be run again to be seen): the report of it on
		// stdout (--json: beside the error, exitWith), and in the error.
		if !e.JSON {
			printMaintainDone(e.Stdout, me)
			printMaintainCompactionNotes(e, me.Report)
		}
		if done := maintainDone(me); done != "" {
			return fmt.Errorf("%w (before the failure, %s)", err, done)
		}
		return err
	}
	if err != nil {
		return err
	}
	if c.DryRun {
		rep.Notes = append(rep.Notes, "planned without the writer lock: a writer at work meanwhile (an import, a capture) can make this plan stale")
	}
	// A failed write is Main's to tell, after the verdict below.
	if e.JSON {
		if err := unprinted(e.printJSON(rep)); err != nil {
			return err
		}
	} else {
		printMaintain(e.Stdout, rep)
		printMaintainCompactionNotes(e, rep)
	}
	// Exit 1, with --json too: a maintain run from cron must not read a
	// store it cannot hold to its budget as success. (A dry run plans.)
	if rep.OverBudgetStuck && !rep.DryRun {
		h := rep.StuckOn
		why := "every session left is protected"
		if h.Sessions == 0 {
			why = "no session is left"
		}
		// The ways out as the note says them, with the file or the
		// command for each.
		ways := h.SayWaysOut(func(w agent.WayOut) string {
			switch w {
			case agent.RaiseBudget:
				return "raise max_total_bytes in " + filepath.Join(e.Home, agent.ConfigFile)
			case agent.UntagSessions:
				return "untag sessions (`" + sessionTagCommand(true, h.Tags) + "`)"
			case agent.RemoveCheckpoints:
				return "remove checkpoints (`rook checkpoint rm NAME`)"
			case agent.RemoveOtherRefs:
				return "remove the other ref files in " + filepath.Join(e.Home, agent.RefsDir)
			}
			return w.String()
		})
		// Bytes the gc grace keeps are freed by a later gc: the excess
		// is what the user must free beside them.
		later := ""
		if rep.LaterGCFrees > 0 {
			later = fmt.Sprintf(" (once a later gc frees the %s the gc grace keeps now)", formatBytes(rep.LaterGCFrees))
		}
		return &exitError{code: ExitFailure, msg: fmt.Sprintf("the store is still %s over its %s budget%s and %s: %s",
			formatBytes(rep.OverBudgetBy), formatBytes(rep.Budget), later, why, ways)}
	}
	return nil
}

// maintainDone says what a maintain that failed (me) did before it
// failed, as its error ends: "" when it changed nothing.
func maintainDone(me *agent.MaintainError) string {
	rep := me.Report
	var done []string
	if n := rep.Prune.SessionsDeleted; n > 0 {
		done = append(done, fmt.Sprintf("maintain's prune deleted %d session(s)", n))
	}
	if g := rep.GC; me.Ran(agent.StageGC) && (g.Collectable > 0 || g.TempFiles > 0 || g.ImportStates > 0) {
		done = append(done, fmt.Sprintf("its gc collected %d object(s) (%s freed)", g.Collectable, formatBytes(g.DiskBefore-g.DiskAfter)))
	}
	if kinds := rep.DictionariesKept(); len(kinds) > 0 {
		done = append(done, "it trained a dictionary for "+strings.Join(kinds, ", "))
	}
	if n := len(rep.BudgetDeleted); n > 0 {
		done = append(done, fmt.Sprintf("its budget stage deleted %d session(s)", n))
	}
	if collected, freed := budgetCollected(rep); collected > 0 {
		done = append(done, fmt.Sprintf("the budget stage's gc collected %d object(s) (%s freed)", collected, formatBytes(freed)))
	}
	if len(done) == 0 {
		return ""
	}
	return strings.Join(done, "; ") + ": those changes stand"
}

// printMaintainCompactionNotes notes each index compaction maintain's gc
// and budget rounds and repack could not make after their commits, as
// gc and repack note theirs (its --json carries each in its stage's
// report): once each, a full disk failing every round the same way.
func printMaintainCompactionNotes(e *Env, rep agent.MaintainReport) {
	whys := []string{rep.GC.IndexCompactionFailed}
	if rep.BudgetRepack != nil {
		whys = append(whys, rep.BudgetRepack.IndexCompactionFailed)
	}
	for _, b := range rep.BudgetGC {
		whys = append(whys, b.IndexCompactionFailed)
	}
	said := map[string]bool{}
	for _, why := range whys {
		if !said[why] {
			said[why] = true
			printIndexCompactionFailed(e, why)
		}
	}
}

// budgetCollected is what the budget stage's gc rounds that ran to their
// end collected: objects, and bytes freed on disk.
func budgetCollected(rep agent.MaintainReport) (collected, freed int64) {
	for _, b := range rep.BudgetGC {
		collected += b.Collectable
		freed += b.DiskBefore - b.DiskAfter
	}
	return collected, freed
}

// printBudgetRepack writes the repack a real budget stage made before
// deleting sessions for bytes (the dry run's plan says in a note that a
// real run packs first).
func printBudgetRepack(w io.Writer, rep agent.MaintainReport) {
	pr := rep.BudgetRepack
	if pr == nil {
		return
	}
	fmt.Fprintf(w, "budget: repacked first (%d segment(s) rewritten): stored %s -> %s\n", pr.SegmentsRewritten, formatBytes(pr.StoredBefore), formatBytes(pr.StoredAfter))
	printSegmentsLeft(w, "budget: repack: ", pr.SegmentsLeft)
}

// budgetSwept is what the budget stage's gc rounds swept besides objects
// beyond what maintain's gc stage (rep.GC) did, as one report for
// printSwept: the dictionaries that may hold pieces of what they
// collected (each once, in the order first named), the temporary files
// and import states removed, the logs without a .meta kept; none of
// what the gc stage says already. A dry run's rounds each plan from the
// start, gc stage included (the last counts every session gone so far):
// its last round's, less the gc stage's plan, is the stage's (the real
// run's rounds find the gc stage's temporary files gone).
func budgetSwept(rep agent.MaintainReport) cas.GCReport {
	out := cas.GCReport{DryRun: rep.DryRun}
	if len(rep.BudgetGC) == 0 {
		return out
	}
	rounds := rep.BudgetGC
	if rep.DryRun {
		last := rep.BudgetGC[len(rep.BudgetGC)-1]
		last.TempFiles = max(last.TempFiles-rep.GC.TempFiles, 0)
		last.TempBytes = max(last.TempBytes-rep.GC.TempBytes, 0)
		last.ImportStates = max(last.ImportStates-rep.GC.ImportStates, 0)
		last.ImportStateBytes = max(last.ImportStateBytes-rep.GC.ImportStateBytes, 0)
		rounds = []cas.GCReport{last}
	}
	dicts := map[uint32]bool{}
	for _, d := range rep.GC.DictionariesMayHold {
		dicts[d.ID] = true
	}
	logs := map[string]bool{}
	for _, l := range rep.GC.KeptLogsWithoutMeta {
		logs[l] = true
	}
	for _, b := range rounds {
		out.TempFiles += b.TempFiles
		out.TempBytes += b.TempBytes
		out.ImportStates += b.ImportStates
		out.ImportStateBytes += b.ImportStateBytes
		for _, d := range b.DictionariesMayHold {
			if !dicts[d.ID] {
				dicts[d.ID] = true
				out.DictionariesMayHold = append(out.DictionariesMayHold, d)
			}
		}
		for _, l := range b.KeptLogsWithoutMeta {
			if !logs[l] {
				logs[l] = true
				out.KeptLogsWithoutMeta = append(out.KeptLogsWithoutMeta, l)
			}
		}
	}
	return out
}

// printMaintainDone writes what a maintain that failed (me) did before it
// failed, as a run that ends writes it: the stages before the one that
// failed, and the sessions that one deleted, if it deletes any.
func printMaintainDone(w io.Writer, me *agent.MaintainError) {
	rep := me.Report
	if me.Stage == agent.StagePrune {
		if rep.Prune.SessionsDeleted > 0 {
			printPrune(w, "prune (before it failed): ", rep.Prune)
		}
		return
	}
	printMaintainStages(w, rep, me)
}

// printMaintain writes maintain's report; a write that fails is
// stdout's, which Main tells after maintain's own verdict.
func printMaintain(w io.Writer, rep agent.MaintainReport) {
	printMaintainStages(w, rep, nil)
}

// printMaintainStages is printMaintain of the stages that ran: every one
// when failed is nil, else those before failed.Stage and the dictionaries
// trained and sessions deleted in it.
func printMaintainStages(w io.Writer, rep agent.MaintainReport, failed *agent.MaintainError) {
	ran := func(stage string) bool { return failed == nil || failed.Ran(stage) }
	dry := dryPrefix(rep.DryRun)
	printPrune(w, "prune: ", rep.Prune)
	if !ran(agent.StageGC) {
		return
	}

	g := rep.GC
	if rep.DryRun {
		fmt.Fprintf(w, "%sgc: scanned %d, reachable %d, collectable %d (%s stored), %d too new\n", dry,
			g.Scanned, g.Reachable, g.Collectable, formatBytes(g.CollectableStored), g.TooNew)
	} else {
		fmt.Fprintf(w, "gc: scanned %d, reachable %d, collected %d (%s freed), %d too new\n",
			g.Scanned, g.Reachable, g.Collectable, formatBytes(g.DiskBefore-g.DiskAfter), g.TooNew)
	}
	printSwept(w, dry+"gc: ", g)
	printSegmentsLeft(w, "gc: ", g.SegmentsLeft)
	if failed != nil && failed.Stage == agent.StageTrain {
		// The dictionaries kept before training failed.
		for _, t := range rep.Trained {
			if t.Kept {
				fmt.Fprintf(w, "trained %s dictionary from %d objects (saves ~%s)\n", t.KindName, t.Objects, formatBytes(t.Gain))
			}
		}
		return
	}

	for _, t := range rep.Trained {
		would := t.Kept || (rep.DryRun && t.DictBytes > 0 && t.Gain > int64(t.DictBytes))
		switch {
		case would && rep.DryRun:
			fmt.Fprintf(w, "%swould train %s dictionary from %d objects (saves ~%s)\n", dry, t.KindName, t.Objects, formatBytes(t.Gain))
		case would:
			fmt.Fprintf(w, "trained %s dictionary from %d objects (saves ~%s)\n", t.KindName, t.Objects, formatBytes(t.Gain))
		case t.Objects == 0 && t.DictBytes == 0 && !strings.Contains(t.Reason, "already"):
			// an empty kind: nothing to say
		case strings.Contains(t.Reason, "already"):
			fmt.Fprintf(w, "%s%s: %s\n", dry, t.KindName, t.Reason)
		default:
			fmt.Fprintf(w, "%s%s: no dictionary (%s)\n", dry, t.KindName, t.Reason)
		}
	}

	if failed != nil && failed.Stage == agent.StageBudget {
		printBudgetRepack(w, rep)
		if n := len(rep.BudgetDeleted); n > 0 {
			fmt.Fprintf(w, "budget (before it failed): deleted %d oldest unprotected session(s)\n", n)
			printSessionRefs(w, rep.BudgetDeleted)
		}
		// The rounds whose gc ran to its end before one failed.
		if collected, freed := budgetCollected(rep); len(rep.BudgetGC) > 0 {
			fmt.Fprintf(w, "budget (before it failed): gc collected %d (%s freed) in %d round(s)\n", collected, formatBytes(freed), len(rep.BudgetGC))
			printSwept(w, "budget (before it failed): gc: ", budgetSwept(rep))
		}
		return
	}
	budget := rep.Budget
	printBudgetRepack(w, rep)
	if rep.DryRun && rep.BudgetRounds > 0 {
		// Each planned gc counts every session gone so far: the last one
		// is the whole stage's.
		last := rep.BudgetGC[len(rep.BudgetGC)-1]
		fmt.Fprintf(w, "%sbudget: would delete %d oldest unprotected session(s) in %d round(s); gc would then collect %d (%s stored), %d too new\n", dry,
			len(rep.BudgetDeleted), rep.BudgetRounds, last.Collectable, formatBytes(last.CollectableStored), last.TooNew)
		printSessionRefs(w, rep.BudgetDeleted)
		printSwept(w, dry+"budget: gc: ", budgetSwept(rep))
	} else if rep.BudgetRounds > 0 {
		collected, freed := budgetCollected(rep)
		fmt.Fprintf(w, "budget: deleted %d oldest unprotected session(s) in %d round(s); gc collected %d (%s freed)\n",
			len(rep.BudgetDeleted), rep.BudgetRounds, collected, formatBytes(freed))
		printSessionRefs(w, rep.BudgetDeleted)
		printSwept(w, "budget: gc: ", budgetSwept(rep))
		for _, b := range rep.BudgetGC {
			printSegmentsLeft(w, "budget: gc: ", b.SegmentsLeft)
		}
	}
	switch {
	case failed != nil:
		// The stored size is what failed to be measured.
	case budget > 0:
		fmt.Fprintf(w, "%sstored %s of the %s budget\n", dry, formatBytes(rep.StoredAfter), formatBytes(budget))
	default:
		fmt.Fprintf(w, "%sstored %s (no budget: max_total_bytes = 0)\n", dry, formatBytes(rep.StoredAfter))
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}
