package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/cas"
)

// A maintain whose budget stage failed in its second round, after the
// first round's gc had collected objects: what that gc freed stands, and
// the error and the report on stdout said only the sessions deleted, so a
// user who saw the store shrink could not tell by how much, nor that the
// collection was done. Both now say what the rounds' gc collected.
func TestMaintainDoneSaysWhatTheBudgetStagesGCCollected(t *testing.T) {
	me := &agent.MaintainError{Stage: agent.StageBudget, Err: errors.New("gc: write: input/output error"), Report: agent.MaintainReport{
		Budget:        1 << 20,
		BudgetRounds:  2,
		BudgetDeleted: []agent.SessionRef{{Title: "old"}, {Title: "older"}},
		BudgetGC:      []cas.GCReport{{Collectable: 7, DiskBefore: 3 << 20, DiskAfter: 2 << 20}},
	}}
	done := maintainDone(me)
	if !strings.Contains(done, "its budget stage deleted 2 session(s); the budget stage's gc collected 7 object(s) (1.0 MiB freed): those changes stand") {
		t.Errorf("maintainDone = %q", done)
	}
	var out strings.Builder
	printMaintainDone(&out, me)
	if !strings.Contains(out.String(), "budget (before it failed): gc collected 7 (1.0 MiB freed) in 1 round(s)\n") {
		t.Errorf("printMaintainDone:\n%s", out.String())
	}
	// A first round's gc that failed: nothing of it to say.
	me.Report.BudgetGC = nil
	if done := maintainDone(me); strings.Contains(done, "gc collected") {
		t.Errorf("maintainDone with no gc round done = %q", done)
	}
	out.Reset()
	printMaintainDone(&out, me)
	if strings.Contains(out.String(), "gc collected") {
		t.Errorf("printMaintainDone with no gc round done:\n%s", out.String())
	}
}
