package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	json "github.com/go-json-experiment/json/v1"

	"github.com/rookhq/rook/eventlog"
)

// session diff of an imported Codex session. Codex keeps no copies of
// files, but its rollout holds the patches the agent applied: each
// apply_patch call's patch (a custom_tool_call's input, a function_call's
// arguments, or an older Codex's shell command `apply_patch <patch>`), its
// output (whether it applied), and, in newer versions, a patch_apply_end
// event with success and, per absolute path, the change made (add with
// the content, delete with the content, update with a unified diff and a
// move_path). Diff derives the session's changes from these when it
// reads the session (rolloutDiff): nothing is stored for them at import,
// so a session imported by an older rook has them too, and the store's
// format is the same. A patch counts as applied only where the rollout
// says it did (a success output, or a patch_apply_end with success); one
// that failed, or whose outcome the rollout does not hold, is left out
// and counted. Where the rollout holds only the patch, its update hunks
// have no line numbers and the file before is unknown: the diff says so
// (FileChange.NoLineNumbers, "-?" in a hunk header) and invents nothing.

// RolloutPatches counts the patches a Codex session's rollout holds:
// applied (shown), failed (left out), unconfirmed (no output nor
// patch_apply_end says how they went: left out), and unread (the rollout
// says they applied, but what they changed does not read: left out, so
// the diff lacks their changes). Notes say which were left out, or did
// not read, and why.
type RolloutPatches struct {
	Applied     int      `json:"applied"`
	Failed      int      `json:"failed"`
	Unconfirmed int      `json:"unconfirmed"`
	Unread      int      `json:"unread"`
	Notes       []string `json:"notes,omitempty"`
	// FromSubagents: of Applied, the patches of the session's imported
	// subagents' rollouts (codexDiffSubagents).
	FromSubagents int `json:"from_subagents,omitempty"`
}

// codexPatchCall is one apply_patch call of a rollout, joined with its
// outcome by call_id.
type codexPatchCall struct {
	seq     uint64    // the event of the call (or of its patch_apply_end)
	at      time.Time // its time
	id      string
	patch   string
	outcome string // "applied", "failed", "unknown" (an output that does not say), "" (none)
	why     string // what the output says, for a failed one
	changes map[string]codexFileChangeJSON
	bad     []string // paths whose change in the patch_apply_end does not read
	cwd     string   // the turn's working directory at the call, if known
	dir     string   // a shell's: the directory it ran apply_patch in, as it says it
	ended   bool     // a patch_apply_end says how it went
	// more: a shell's script runs more after apply_patch's heredoc (`sed
	// -i ...` on the next line), which may change files the patch does
	// not say: a command too (codexCommandSeqs).
	more bool
}

// codexFileChangeJSON is one path's change in a patch_apply_end event.
type codexFileChangeJSON struct {
	Type        string  `json:"type"`
	Content     *string `json:"content"`
	UnifiedDiff *string `json:"unified_diff"`
	MovePath    *string `json:"move_path"`
}

// codexPatchPayload is what rolloutDiff reads of a line's payload. Its
// values are read one by one (codexPatchPayloadOf), as the mapping reads
// a line's: a member of an unexpected type reads as absent rather than
// losing the whole line, and with it a patch.
type codexPatchPayload struct {
	Type, Name, CallID, Status, Stderr string
	Cwd                                string // a turn_context's
	Input, Arguments, Action, Output   json.RawMessage
	Success                            *bool
	Changes                            map[string]codexFileChangeJSON
	// BadChanges: the paths of changes that do not read.
	BadChanges []string
}

// codexPatchRaw is a payload as decoded, before its values are read.
type codexPatchRaw struct {
	Type      json.RawMessage `json:"type"`
	Name      json.RawMessage `json:"name"`
	CallID    json.RawMessage `json:"call_id"`
	Input     json.RawMessage `json:"input"`
	Arguments json.RawMessage `json:"arguments"`
	Action    json.RawMessage `json:"action"`
	Output    json.RawMessage `json:"output"`
	Success   json.RawMessage `json:"success"`
	Status    json.RawMessage `json:"status"`
	Stderr    json.RawMessage `json:"stderr"`
	Changes   json.RawMessage `json:"changes"`
	Cwd       json.RawMessage `json:"cwd"`
}

// codexPatchTools label the tool calls (and results) that may apply a
// patch: apply_patch itself, and the shells an older Codex ran it with.
var codexPatchTools = map[string]bool{"apply_patch": true, "shell": true, "local_shell": true, "container.exec": true, "shell_command": true, "exec_command": true}

const codexPatchEndLabel = "event_msg:patch_apply_end"

// rolloutUnread: an event of a Codex rollout that rolloutPatchCalls
// reads (a patch call, its output, a turn_context) does not read (its
// object damaged, or gone from the store). Every patch is read, in order,
// each on what those before it left: none is known without it.
type rolloutUnread struct {
	seq uint64
	err error
}

func (e *rolloutUnread) Error() string {
	return fmt.Sprintf("event #%d cannot be read: %v", e.seq, e.err)
}

func (e *rolloutUnread) Unwrap() error { return e.err }

// ownRolloutUnread is err of reading session id's own rollout, said as
// what failed (what), why so (so), what to do (unreadHow) and then
// what else (then) when it is an event that does not read; else err. It
// wraps no error of the store's: it says already what checks the store.
func (r *Rook) ownRolloutUnread(id eventlog.ID, err error, what, so, then string) error {
	var ru *rolloutUnread
	if !errors.As(err, &ru) {
		return err
	}
	return fmt.Errorf("%s: event #%d of session %s cannot be read (%v), and the patches of its Codex rollout are read in order from its start, each on what those before it left, so %s; %s%s",
		what, ru.seq, id, ru.err, so, r.unreadHowOf(id, ru.err), then)
}

// rolloutPatchCalls reads the apply_patch calls of a session's events, in
// the order of their calls.
func (r *Rook) rolloutPatchCalls(id eventlog.ID) ([]*codexPatchCall, error) {
	byID := map[string]*codexPatchCall{}
	var order []*codexPatchCall
	waiting := 0 // patch calls with no outcome yet
	cwd := ""    // the turn's, as the last turn_context says
	get := func(cid string, ev eventlog.Event) *codexPatchCall {
		c, ok := byID[cid]
		if !ok {
			c = &codexPatchCall{seq: ev.Seq, at: ev.Time, id: cid}
			byID[cid] = c
			order = append(order, c)
		}
		return c
	}
	for from := uint64(0); ; {
		evs, err := r.Log.Read(id, from, 1024)
		if err != nil {
			return nil, err
		}
		if len(evs) == 0 {
			break
		}
		for _, ev := range evs {
			switch {
			case ev.Kind == eventlog.KindToolCall && codexPatchTools[ev.Label]:
			case ev.Kind == eventlog.KindToolResult && codexPatchTools[ev.Label] && waiting > 0:
				// (A shell's output is read only while a patch call
				// waits for its own: most run no patch, and are long.)
			case ev.Kind == eventlog.KindNote && (strings.Contains(ev.Label, codexPatchEndLabel) ||
				strings.HasPrefix(ev.Label, "turn_context") || strings.Contains(ev.Label, " +")):
				// A patch_apply_end, or a turn_context (the cwd a patch's
				// relative paths are against), alone or among the notes
				// of one event ("session_meta +2").
			default:
				continue
			}
			body, imported, err := r.readBody(ev.Body)
			if err != nil {
				return nil, &rolloutUnread{seq: ev.Seq, err: err}
			}
			if !imported {
				continue
			}
			for _, line := range sourceLines(body) {
				p, ok := codexPatchPayloadOf(entryBytes(trimNewline(line)))
				if ok && p.Type == "turn_context" && rolloutAbs(p.Cwd) {
					cwd = p.Cwd
				}
				if !ok || p.CallID == "" {
					continue
				}
				switch {
				case codexCalls[p.Type]:
					if text, dir, more, ok := codexCallPatch(p); ok {
						if c := get(p.CallID, ev); c.patch == "" && !c.ended {
							c.patch, c.cwd, c.dir, c.more = text, cwd, dir, more
							waiting++
						}
					}
				case codexOutputs[p.Type]:
					if c, ok := byID[p.CallID]; ok && !c.ended && c.outcome == "" {
						c.outcome, c.why = codexPatchOutcome(p.Output)
						waiting--
					}
				case p.Type == "patch_apply_end":
					c := get(p.CallID, ev)
					if c.patch != "" && c.outcome == "" && !c.ended {
						waiting--
					}
					c.ended, c.changes, c.bad = true, p.Changes, p.BadChanges
					ok := p.Success != nil && *p.Success || p.Success == nil && p.Status == "completed"
					if c.outcome, c.why = "failed", firstLine(p.Stderr); ok {
						c.outcome, c.why = "applied", ""
					} else if p.Status != "" && p.Status != "failed" {
						c.why = p.Status // "declined"
					}
				}
			}
		}
		from = evs[len(evs)-1].Seq + 1
	}
	// A shell call that ran no patch is no patch call.
	out := order[:0]
	for _, c := range order {
		if c.patch != "" || c.ended {
			out = append(out, c)
		}
	}
	return out, nil
}

// codexPatchPayloadOf reads a rollout line's payload (an older rollout's
// bare item is its own payload).
func codexPatchPayloadOf(line []byte) (codexPatchPayload, bool) {
	var l struct {
		Type    json.RawMessage `json:"type"`
		Payload codexPatchRaw   `json:"payload"`
	}
	if json.Unmarshal(line, &l) != nil {
		return codexPatchPayload{}, false
	}
	raw := l.Payload
	switch typ := rawString(l.Type); {
	case typ == "turn_context":
		return codexPatchPayload{Type: typ, Cwd: rawString(raw.Cwd)}, true
	case typ == "response_item" || typ == "event_msg":
	case codexItemTypes[typ]:
		raw = codexPatchRaw{}
		if json.Unmarshal(line, &raw) != nil {
			return codexPatchPayload{}, false
		}
	default:
		return codexPatchPayload{}, false
	}
	p := codexPatchPayload{Type: rawString(raw.Type), Name: rawString(raw.Name), CallID: rawString(raw.CallID),
		Status: rawString(raw.Status), Stderr: rawString(raw.Stderr),
		Input: raw.Input, Arguments: raw.Arguments, Action: raw.Action, Output: raw.Output}
	if b := string(raw.Success); b == "true" || b == "false" {
		ok := b == "true"
		p.Success = &ok
	}
	var changes map[string]json.RawMessage
	if len(raw.Changes) > 0 && raw.Changes[0] == '{' && json.Unmarshal(raw.Changes, &changes) == nil {
		p.Changes = map[string]codexFileChangeJSON{}
		for path, c := range changes {
			var fc codexFileChangeJSON
			if json.Unmarshal(c, &fc) != nil {
				p.BadChanges = append(p.BadChanges, path)
				continue
			}
			p.Changes[path] = fc
		}
		sort.Strings(p.BadChanges)
	}
	return p, true
}

// codexCallPatch is the patch a tool call applies, if it applies one,
// and, for a shell, the directory it ran it in (its workdir, a
// local_shell_call's working_directory, then a script's `cd dir &&`, in
// turn: Codex resolves the patch's relative paths there), "" if the
// turn's.
func codexCallPatch(p codexPatchPayload) (patch, dir string, more, ok bool) {
	if p.Name == "apply_patch" {
		if s := rawString(p.Input); s != "" {
			return s, "", false, true // custom_tool_call: the patch itself
		}
		var args struct {
			Input string `json:"input"`
			Patch string `json:"patch"`
		}
		if s := rawString(p.Arguments); s != "" && json.Unmarshal([]byte(s), &args) == nil {
			if args.Input != "" {
				return args.Input, "", false, true
			}
			return args.Patch, "", false, args.Patch != ""
		}
		return "", "", false, false
	}
	// A shell: {"command": ["apply_patch", patch]}, or a script that runs
	// apply_patch with a heredoc (after `cd dir &&`, or not), as a
	// command or an exec_command's "cmd"; a local_shell_call's action the
	// same.
	var cmd struct {
		Command json.RawMessage `json:"command"`
		// Cmd: a newer Codex's exec_command (unified exec) names its
		// script so.
		Cmd              json.RawMessage `json:"cmd"`
		Workdir          json.RawMessage `json:"workdir"`
		WorkingDirectory json.RawMessage `json:"working_directory"`
	}
	if s := rawString(p.Arguments); s != "" {
		if json.Unmarshal([]byte(s), &cmd) != nil {
			return "", "", false, false
		}
	} else if len(p.Action) == 0 || json.Unmarshal(p.Action, &cmd) != nil {
		return "", "", false, false
	}
	dir = rawString(cmd.Workdir)
	if dir == "" {
		dir = rawString(cmd.WorkingDirectory)
	}
	var argv []string
	if s := rawString(cmd.Command); s != "" {
		argv = []string{s}
	} else if s := rawString(cmd.Cmd); s != "" && len(cmd.Command) == 0 {
		argv = []string{s}
	} else if json.Unmarshal(cmd.Command, &argv) != nil || len(argv) == 0 {
		return "", "", false, false
	}
	if (argv[0] == "apply_patch" || argv[0] == "applypatch") && len(argv) == 2 {
		return argv[1], dir, false, true
	}
	script := strings.TrimSpace(argv[len(argv)-1])
	if rest, ok := strings.CutPrefix(script, "cd "); ok {
		// `cd dir && apply_patch <<'EOF'`: one word, or one quoted.
		to, after, ok := strings.Cut(rest, "&&")
		to = strings.TrimSpace(to)
		if len(to) >= 2 && (to[0] == '\'' || to[0] == '"') && to[len(to)-1] == to[0] {
			to = to[1 : len(to)-1]
		} else if strings.ContainsAny(to, " \t'\"") {
			ok = false
		}
		if !ok || to == "" {
			return "", "", false, false
		}
		dir = rolloutJoin(dir, to)
		script = strings.TrimSpace(after)
	}
	for _, name := range []string{"apply_patch", "applypatch"} {
		if rest, ok := strings.CutPrefix(script, name); ok && strings.HasPrefix(strings.TrimSpace(rest), "<<") {
			body, more := heredocBody(strings.TrimSpace(rest))
			return body, dir, more, true
		}
	}
	return "", "", false, false
}

// heredocBody is the body of a heredoc, "<<'DELIM'\n...\nDELIM", as a
// shell passes it (any delimiter, quoted or not); s itself if its end is
// not found (the patch then does not read, and is noted).
func heredocBody(s string) (body string, more bool) {
	head, rest, ok := strings.Cut(s, "\n")
	delim := strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(head, "<<")), "-")
	if len(delim) >= 2 && (delim[0] == '\'' || delim[0] == '"') && delim[len(delim)-1] == delim[0] {
		delim = delim[1 : len(delim)-1]
	}
	if !ok || delim == "" || strings.ContainsAny(delim, " \t'\"") {
		return s, false
	}
	lines := strings.Split(rest, "\n")
	for i, l := range lines {
		if strings.TrimRight(l, "\r") == delim {
			return strings.Join(lines[:i], "\n"), strings.TrimSpace(strings.Join(lines[i+1:], "\n")) != ""
		}
	}
	return s, false
}

// codexPatchOutcome reads an apply_patch call's output: "applied" when it
// says so, "unknown" and why when it exited 0 yet does not say so, else
// "failed" and the first line of what it says. The output
// is a string: the text, {"output": text, "metadata": {"exit_code": n}}
// (a function call's), or "Exit code: n\nWall time: ...\nOutput:\n"
// before the text (a custom tool call's), or "Chunk ID: ...\nProcess
// exited with code n\n...Output:\n" (an exec_command's); or, in some
// versions, an object {"content": text, "success": bool}.
func codexPatchOutcome(out json.RawMessage) (outcome, why string) {
	var text string
	exit := -1
	if len(out) > 0 && out[0] == '{' {
		var o struct {
			Content json.RawMessage `json:"content"`
			Success *bool           `json:"success"`
		}
		if json.Unmarshal(out, &o) == nil && o.Success != nil {
			if *o.Success {
				return "applied", ""
			}
			return "failed", firstLine(rawString(o.Content))
		}
		return "failed", "an output rook does not read"
	}
	text = rawString(out)
	if strings.HasPrefix(strings.TrimSpace(text), "{") {
		var o struct {
			Output   string `json:"output"`
			Metadata struct {
				ExitCode *int `json:"exit_code"`
			} `json:"metadata"`
		}
		if json.Unmarshal([]byte(text), &o) == nil {
			text = o.Output
			if o.Metadata.ExitCode != nil {
				exit = *o.Metadata.ExitCode
			}
		}
	}
	if rest, ok := strings.CutPrefix(text, "Exit code: "); ok {
		n, after, _ := strings.Cut(rest, "\n")
		if v, err := strconv.Atoi(strings.TrimSpace(n)); err == nil {
			exit = v
		}
		if _, o, ok := strings.Cut(after, "Output:\n"); ok {
			text = o
		}
	}
	if head, o, ok := strings.Cut(text, "\nOutput:\n"); ok && strings.HasPrefix(text, "Chunk ID: ") {
		// An exec_command's: "Chunk ID: ...\nWall time: ...\nProcess
		// exited with code N\n...Output:\n" before the text.
		for _, l := range strings.Split(head, "\n") {
			if n, ok := strings.CutPrefix(l, "Process exited with code "); ok {
				if v, err := strconv.Atoi(strings.TrimSpace(n)); err == nil {
					exit = v
				}
			}
		}
		text = o
	}
	said := strings.Contains(text, "Success. Updated the following files") || strings.TrimSpace(text) == "Done!"
	switch {
	case exit == 0 && said, exit == -1 && said:
		return "applied", ""
	case exit > 0:
		return "failed", fmt.Sprintf("exit code %d: %s", exit, firstLine(text))
	case exit == 0:
		// It ran well, but does not say it applied: not known either way.
		return "unknown", "exit code 0, but its output does not say it applied: " + firstLine(text)
	}
	return "failed", firstLine(text)
}

// firstLine is the first non-empty line of s, clipped, for a note.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return clip(l, 120)
		}
	}
	return "no output"
}

// rolloutFile is one path's changes, patch after patch.
type rolloutFile struct {
	path, movedFrom string
	status          string // added, modified, removed
	body            bytes.Buffer
	added, removed  int
	patches         int
	noLineNumbers   bool
	noBody          string // why the change has no body
	// known: the file's lines now (without their newlines), while every
	// patch of it since it was added whole could be applied to them: the
	// section is then the file's lines, as for a file captured absent.
	known   []string
	isKnown bool
	// before: the file's lines before the session (with their
	// newlines), when the rollout holds them: a deletion, its first
	// change, gave its content.
	before    []string
	hasBefore bool
	// overwritten: a patch wrote it whole (Add File) over content the
	// rollout does not hold.
	overwritten bool
	// whole: patches when the body last became one change (a deletion, an
	// Add File): the hunks of later patches only are in turn.
	whole int
}

// rolloutDiff is Diff for an imported Codex session with no captures:
// the changes its applied patches made, per file, from the rollout.
func (r *Rook) rolloutDiff(d *SessionDiff, ws string, w io.Writer, color bool) error {
	calls, err := r.rolloutPatchCalls(d.Session)
	if err != nil {
		return r.ownRolloutUnread(d.Session, err, "cannot show the files it changed", "what its patches changed is not known", "")
	}
	// Its imported subagents' patches are its changes too, in the order
	// they came (codex_diff_subagents.go).
	sub, err := r.codexDiffSubagents(d.Session, ws, calls)
	if err != nil {
		return err
	}
	d.Notes, d.MissingSubagents, d.UnreadSubagents, d.UnreadEvents = sub.notes, sub.missing, sub.unread, sub.unreadEvents
	rp := &RolloutPatches{}
	d.Patches, d.Root = rp, ws
	files := map[string]*rolloutFile{}
	// bySub: the subagents whose patches wrote each path; byOwn: the
	// paths the session's own did.
	bySub, byOwn := map[string][]eventlog.ID{}, map[string]bool{}
	for _, x := range sub.order(calls, ws) {
		c, crp, of := x.c, rp, ""
		if !x.session.IsZero() && codexOutsideOnly(c, x.ws, ws) {
			// A subagent's patch of files outside the workspace only
			// (its own cwd's, recorded in a sibling of it, say) is no
			// change of this session's workspace: neither shown nor
			// counted, applied or not.
			continue
		}
		if !x.session.IsZero() {
			// A subagent's notes name its session: their events are its.
			crp, of = &RolloutPatches{}, fmt.Sprintf("session %s (%s): ", x.session, sub.kin[x.session])
		}
		steps, applied := codexCallSteps(c, x.ws, crp)
		if crp != rp {
			rp.Applied, rp.FromSubagents = rp.Applied+crp.Applied, rp.FromSubagents+crp.Applied
			rp.Failed, rp.Unconfirmed, rp.Unread = rp.Failed+crp.Failed, rp.Unconfirmed+crp.Unconfirmed, rp.Unread+crp.Unread
			for _, n := range crp.Notes {
				rp.Notes = append(rp.Notes, of+n)
			}
		}
		if !applied {
			continue
		}
		for _, st := range steps {
			if !x.session.IsZero() && st.outside(ws) {
				// (A subagent's patch of files in and outside the
				// workspace: those in it alone.)
				continue
			}
			if note := st.apply(files, ws, color); note != "" {
				rp.Notes = append(rp.Notes, fmt.Sprintf("%sthe patch of event #%d: %s", of, c.seq, note))
			}
			p, moved := st.paths(ws)
			for _, q := range []string{p, moved} {
				switch {
				case q == "":
				case x.session.IsZero():
					byOwn[q] = true
				case !slices.Contains(bySub[q], x.session):
					bySub[q] = append(bySub[q], x.session)
				}
			}
		}
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		f := files[p]
		if f.status == "modified" && f.body.Len() == 0 && f.noBody == "" && f.movedFrom == "" {
			// Written back as it was before the session (deleted, then
			// added again the same): no change.
			d.Unchanged++
			continue
		}
		whole := f.status == "added" && f.isKnown && f.patches > 1
		if whole {
			// Added whole, and each patch since applied to it: the file
			// as the session left it, whole.
			f.body.Reset()
			f.added, f.removed, f.noLineNumbers = len(f.known), 0, false
			if len(f.known) > 0 {
				f.body.WriteString(codexFrag(hunkRange(1, 0), hunkRange(1, len(f.known)), color))
			}
			for _, l := range f.known {
				writeContentLines(&f.body, '+', []string{l + "\n"}, color)
			}
		}
		fc := FileChange{Path: f.path, Status: f.status, Added: f.added, Removed: f.removed, MovedFrom: f.movedFrom,
			NoLineNumbers: f.noLineNumbers, Patches: f.patches, InTurn: f.patches > max(1, f.whole) && !whole && f.noBody == "",
			Outside: codexOutside(f.path), Overwritten: f.overwritten}
		if fc.Outside {
			fc.PatchPath = codexPatchName(ws, f.path)
		}
		if f.noBody != "" {
			// (Nor the hunks of patches after what made it unknown.)
			fc.NoBody, fc.Reason, fc.Added, fc.Removed, fc.NoLineNumbers = true, f.noBody, 0, 0, false
			f.body.Reset()
			f.added, f.removed = 0, 0
		}
		if w != nil {
			if _, err := w.Write(rolloutSection(f, ws, color)); err != nil {
				return err
			}
		}
		d.Added += f.added
		d.Removed += f.removed
		d.Files = append(d.Files, fc)
		subs := slices.Clone(bySub[f.path])
		for _, s := range bySub[f.movedFrom] {
			if !slices.Contains(subs, s) {
				subs = append(subs, s)
			}
		}
		if len(subs) > 0 {
			d.Notes = append(d.Notes, sub.note(f.path, subs, byOwn[f.path] || byOwn[f.movedFrom]))
		}
	}
	d.FromRollout = len(d.Files)
	return nil
}

// codexStep is one change of a patch call: an operation of its patch (cwd:
// the directory its relative paths are against), or one path's change in
// its patch_apply_end (abs: the path it names).
type codexStep struct {
	op     *codexPatchOp
	cwd    string
	abs    string
	change codexFileChangeJSON
}

// codexCallSteps counts a call in rp, notes why it is left out if it is,
// and gives its steps: applied, those the diff applies; else, of a call
// the rollout does not say applied (unconfirmed), those its patch would
// make, when it reads (a rewind must not take it as not made).
func codexCallSteps(c *codexPatchCall, ws string, rp *RolloutPatches) (steps []codexStep, applied bool) {
	switch c.outcome {
	case "failed":
		rp.Failed++
		rp.Notes = append(rp.Notes, fmt.Sprintf("the patch of event #%d did not apply (%s): left out", c.seq, c.why))
		return nil, false
	case "", "unknown":
		why := c.why
		if c.outcome == "" {
			why = "no output for it"
		}
		rp.Unconfirmed++
		rp.Notes = append(rp.Notes, fmt.Sprintf("the rollout does not say whether the patch of event #%d applied (%s): left out", c.seq, why))
		ops, err := parseCodexPatch(c.patch)
		if c.patch == "" || err != nil {
			return nil, false
		}
		return codexOpSteps(c, ws, ops), false
	}
	for _, p := range c.bad {
		rp.Notes = append(rp.Notes, fmt.Sprintf("the patch_apply_end of the patch of event #%d: the change of %s does not read: left out", c.seq, codexRel(ws, "", p)))
	}
	if len(c.changes)+len(c.bad) > 0 {
		rp.Applied++
		paths := make([]string, 0, len(c.changes))
		for p := range c.changes {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			steps = append(steps, codexStep{abs: p, change: c.changes[p]})
		}
		return steps, true
	}
	if c.patch == "" {
		rp.Unread++
		rp.Notes = append(rp.Notes, fmt.Sprintf("the patch_apply_end of event #%d says a patch applied, but the rollout holds neither its changes nor its call: left out", c.seq))
		return nil, false
	}
	ops, err := parseCodexPatch(c.patch)
	if err != nil {
		// The rollout says it applied, yet it does not read: what it
		// changed is not known.
		rp.Unread++
		rp.Notes = append(rp.Notes, fmt.Sprintf("the patch of event #%d applied, but does not read (%v): left out", c.seq, err))
		return nil, false
	}
	rp.Applied++
	return codexOpSteps(c, ws, ops), true
}

// codexOpSteps are the operations of a call's patch, each against the
// directory its relative paths are against.
func codexOpSteps(c *codexPatchCall, ws string, ops []codexPatchOp) []codexStep {
	cwd := c.cwd
	if cwd == "" && rolloutAbs(ws) {
		cwd = ws // (the turn's is not known: the session's)
	}
	if c.dir != "" && (cwd != "" || rolloutAbs(c.dir)) {
		cwd = rolloutJoin(cwd, c.dir)
	}
	steps := make([]codexStep, len(ops))
	for i := range ops {
		steps[i] = codexStep{op: &ops[i], cwd: cwd}
	}
	return steps
}

// apply adds the step to files; it says why when the change does not read.
func (s codexStep) apply(files map[string]*rolloutFile, ws string, color bool) string {
	if s.op != nil {
		applyCodexOp(files, ws, s.cwd, *s.op, color)
		return ""
	}
	return applyCodexChange(files, ws, s.abs, s.change, color)
}

// outside says whether the step writes outside workspace ws only: its
// path, and the one it moves the file to, if any.
func (s codexStep) outside(ws string) bool {
	p, moved := s.paths(ws)
	return codexOutside(p) && (moved == "" || codexOutside(moved))
}

// codexOutsideOnly says whether every path call c names (its
// patch_apply_end's changes, those that do not read too; else its
// patch's, ows the directory its relative paths are against) is outside
// workspace ws. False when they are not known (a patch that does not
// read).
func codexOutsideOnly(c *codexPatchCall, ows, ws string) bool {
	var steps []codexStep
	if len(c.changes)+len(c.bad) > 0 {
		for p, ch := range c.changes {
			steps = append(steps, codexStep{abs: p, change: ch})
		}
		for _, p := range c.bad {
			steps = append(steps, codexStep{abs: p})
		}
	} else {
		ops, err := parseCodexPatch(c.patch)
		if c.patch == "" || err != nil {
			return false
		}
		steps = codexOpSteps(c, ows, ops)
	}
	for _, st := range steps {
		if !st.outside(ws) {
			return false
		}
	}
	return len(steps) > 0
}

// kind is the step's: add, delete or update (or a change's unknown kind).
func (s codexStep) kind() string {
	if s.op != nil {
		return s.op.Kind
	}
	return s.change.Type
}

// paths are the paths the step writes, as the diff names them: its own,
// and the one it moves the file to, if any.
func (s codexStep) paths(ws string) (p, to string) {
	if s.op != nil {
		p = codexRel(ws, s.cwd, s.op.Path)
		if s.op.Kind == "update" && s.op.MoveTo != "" {
			to = codexRel(ws, s.cwd, s.op.MoveTo)
		}
		return p, to
	}
	p = codexRel(ws, "", s.abs)
	if s.change.Type == "update" && s.change.MovePath != nil && *s.change.MovePath != "" {
		to = codexRel(ws, "", *s.change.MovePath)
	}
	return p, to
}

// rolloutSection writes a file's changes as a git-style section: git's
// header lines, then each patch's hunks in turn (a later patch's against
// the file as the one before left it). A path outside the workspace ws is
// named from it (codexPatchName).
func rolloutSection(f *rolloutFile, ws string, color bool) []byte {
	var buf bytes.Buffer
	meta := func(s string) {
		if color {
			s = colorMeta + s + colorReset
		}
		buf.WriteString(s + "\n")
	}
	to := codexPatchName(ws, f.path)
	from := to
	if f.movedFrom != "" {
		from = codexPatchName(ws, f.movedFrom)
	}
	meta("diff --git " + quotePath("a/", from) + " " + quotePath("b/", to))
	oldLabel, newLabel := quotePath("a/", from), quotePath("b/", to)
	switch f.status {
	case "added":
		// The rollout does not say its mode: Codex writes a new file as
		// the umask leaves it, 0644 as a rule. git apply needs a mode here
		// (a bare "new file" line makes it fail).
		meta("new file mode 100644")
		oldLabel = "/dev/null"
	case "removed":
		meta("deleted file")
		newLabel = "/dev/null"
	}
	if f.movedFrom != "" {
		meta("rename from " + quotePath("", from))
		meta("rename to " + quotePath("", to))
	}
	if f.body.Len() == 0 {
		return buf.Bytes()
	}
	meta("--- " + oldLabel + tabIfSpace(oldLabel))
	meta("+++ " + newLabel + tabIfSpace(newLabel))
	buf.Write(f.body.Bytes())
	return buf.Bytes()
}

// codexOutside says whether a path as codexRel gives it is outside the
// workspace: absolute (an absolute path elsewhere, or any, when the
// workspace is not known), or one that climbs out of it.
func codexOutside(p string) bool {
	return codexAbsName(p) || p == ".." || strings.HasPrefix(p, "../")
}

// codexAbsName says whether p, as codexRel gives it, is absolute: a POSIX
// path, or a Windows one with slashes ("C:/x", a share's "//server/x").
func codexAbsName(p string) bool {
	return strings.HasPrefix(p, "/") || len(p) >= 3 && p[1] == ':' && p[2] == '/'
}

// codexPatchName is the name a section gives path p (as codexRel gives
// it): p, or, for a path outside the workspace ws, the path to it from
// the workspace ("../../etc/hosts"), which git apply run in the workspace
// refuses ("invalid path") rather than writing a file elsewhere (an
// absolute name would read "a//etc/hosts", and strip to a path inside).
// With no workspace known, an absolute path is named from the root after
// "..": refused all the same.
func codexPatchName(ws, p string) string {
	if !codexAbsName(p) {
		return p
	}
	if rel, ok := rolloutRelUp(ws, p); ok && strings.HasPrefix(rel, "../") {
		return rel
	}
	return "../" + strings.TrimLeft(p, "/")
}

// codexRel is the path a patch names as the diff names it: relative to
// the workspace (a path inside it written absolute, as patch_apply_end
// writes them all), or as written. A relative path is against cwd, the
// turn's working directory, when it is known: Codex resolves it there.
//
// The paths are read by the rules of the machine the rollout was made on
// (codex_paths.go), not the host's: a Windows one is named with slashes.
func codexRel(ws, cwd, p string) string {
	win := rolloutWinAbs(ws) || rolloutWinAbs(cwd) || rolloutWinAbs(p)
	if !rolloutAbs(p) && cwd != "" && rolloutAbs(ws) {
		p = rolloutJoin(cwd, p)
	}
	if rolloutAbs(p) {
		if rel, ok := rolloutRel(ws, p); ok {
			return rel
		}
		if !rolloutWinAbs(p) && !rolloutWinAbs(ws) {
			// (By the workspace's real path too, for a link to it.)
			if rel, ok := workspaceRel(ws, p); ok {
				return rel
			}
		}
		return rolloutClean(p, rolloutWinAbs(p))
	}
	if win {
		p = strings.ReplaceAll(p, `\`, "/")
	}
	return path.Clean(p)
}

// applyCodexOp adds one operation of a patch the rollout holds.
func applyCodexOp(files map[string]*rolloutFile, ws, cwd string, op codexPatchOp, color bool) {
	p := codexRel(ws, cwd, op.Path)
	switch op.Kind {
	case "add":
		codexAdded(files, p, op.Content, color)
	case "delete":
		codexRemoved(files, p, nil, color)
	case "update":
		f := codexFileAt(files, p, color)
		a, rm := writeCodexChunks(&f.body, op.Chunks, color)
		f.added, f.removed, f.noLineNumbers = f.added+a, f.removed+rm, true
		if f.isKnown {
			f.known, f.isKnown = applyCodexChunks(f.known, op.Chunks)
		}
		if op.MoveTo != "" {
			codexMoved(files, f, codexRel(ws, cwd, op.MoveTo), color)
		}
	}
}

// applyCodexChange adds one path's change of a patch_apply_end; it says
// why when the change does not read.
func applyCodexChange(files map[string]*rolloutFile, ws, abs string, c codexFileChangeJSON, color bool) string {
	p := codexRel(ws, "", abs)
	switch c.Type {
	case "add":
		if c.Content == nil {
			return fmt.Sprintf("the addition of %s holds no content: left out", p)
		}
		codexAdded(files, p, []byte(*c.Content), color)
	case "delete":
		var old []byte
		if c.Content != nil {
			old = []byte(*c.Content)
		}
		codexRemoved(files, p, old, color)
	case "update":
		f := codexFileAt(files, p, color)
		if c.UnifiedDiff != nil {
			a, rm := writeUnifiedHunks(&f.body, *c.UnifiedDiff, color)
			f.added, f.removed = f.added+a, f.removed+rm
			if f.isKnown {
				// The file's lines are known (added whole): its diff
				// applies to them where it does exactly, else they are
				// not known after it.
				f.known, f.isKnown = applyUnifiedHunks(f.known, *c.UnifiedDiff)
			}
		} else {
			f.isKnown = false // what it changed is not in the rollout
		}
		if c.MovePath != nil && *c.MovePath != "" {
			codexMoved(files, f, codexRel(ws, "", *c.MovePath), color)
		}
	default:
		return fmt.Sprintf("a change of %s of a kind rook does not know (%q): left out", p, c.Type)
	}
	return ""
}

// codexFileAt is the changes of path p so far, a new modified file's if
// none: a patch that updates a file the session had not touched.
func codexFileAt(files map[string]*rolloutFile, p string, color bool) *rolloutFile {
	codexReclaim(files, p, color)
	f, ok := files[p]
	if !ok {
		f = &rolloutFile{path: p, status: "modified"}
		files[p] = f
	}
	if f.status == "removed" {
		// Deleted, then written again: modified, from what is unknown.
		f.status, f.noBody = "modified", ""
	}
	f.patches++
	return f
}

// codexAdded: a patch wrote p whole.
func codexAdded(files map[string]*rolloutFile, p string, content []byte, color bool) {
	codexReclaim(files, p, color)
	f, had := files[p]
	lines := splitLines(content)
	if !had || f.status == "added" {
		// New: the whole file, a hunk git would write.
		if had {
			f.body.Reset()
			f.added, f.removed = 0, 0
		} else {
			f = &rolloutFile{path: p, status: "added"}
			files[p] = f
		}
		f.patches++
		f.whole = f.patches
		f.known, f.isKnown = knownLines(content, lines)
		if len(lines) > 0 { // an empty file has no hunk
			f.body.WriteString(codexFrag(hunkRange(1, 0), hunkRange(1, len(lines)), color))
		}
	} else if f = codexFileAt(files, p, color); f.hasBefore {
		// Written over a file whose content before the session the
		// rollout holds (its deletion gave it): a modification from it,
		// as git would show it.
		f.body.Reset()
		f.added, f.removed, f.noLineNumbers, f.noBody = 0, 0, false, ""
		f.whole = f.patches
		f.known, f.isKnown = knownLines(content, lines)
		changes := diffLines(f.before, lines)
		for _, c := range changes {
			f.added, f.removed = f.added+c.n2, f.removed+c.n1
		}
		writeHunks(&f.body, f.before, lines, changes, color)
		return
	} else {
		// Written over a file the session had changed (or deleted): Codex
		// overwrites it, and what it held before is not in the rollout.
		if f.noBody != "" {
			// (What it held was not known: the file whole is.)
			f.body.Reset()
			f.added, f.removed, f.noBody = 0, 0, ""
		}
		f.noLineNumbers, f.overwritten = true, true
		f.known, f.isKnown = knownLines(content, lines)
		if f.body.Len() == 0 {
			f.whole = f.patches // (after a deletion whose content is not known)
		}
		f.body.WriteString(codexFrag("?,?", hunkRange(1, len(lines)), color))
	}
	writeContentLines(&f.body, '+', lines, color)
	f.added += len(lines)
}

// knownLines are a file written whole's lines (lines: content's, with
// their newlines) without their newlines, as rolloutFile.known holds
// them; ok is false when its last line has no newline (known holds only
// files that end with one, as Codex writes them after an update).
func knownLines(content []byte, lines []string) (known []string, ok bool) {
	for _, l := range lines {
		known = append(known, strings.TrimSuffix(l, "\n"))
	}
	return known, bytes.HasSuffix(content, []byte("\n")) || len(content) == 0
}

// codexRemoved: a patch deleted p (old: its content, when the rollout
// holds it).
func codexRemoved(files map[string]*rolloutFile, p string, old []byte, color bool) {
	codexReclaim(files, p, color)
	f, had := files[p]
	if had && f.status == "added" {
		delete(files, p) // made and deleted in the session: nothing changed
		return
	}
	if !had {
		f = &rolloutFile{path: p}
		files[p] = f
	}
	if _, taken := files[f.movedFrom]; f.movedFrom != "" && !taken {
		// Moved here in the session, then deleted: what is gone is the
		// file it moved, at its path; where it moved did not exist.
		delete(files, p)
		f.path, f.movedFrom = f.movedFrom, ""
		files[f.path] = f
	}
	f.status, f.patches, f.isKnown, f.overwritten = "removed", f.patches+1, false, false
	f.whole = f.patches
	f.body.Reset()
	f.added, f.removed, f.noLineNumbers, f.noBody = 0, 0, false, ""
	if old == nil && !f.hasBefore {
		f.noBody = "its content before is not in the rollout"
		return
	}
	lines := f.before
	switch {
	case had && f.hasBefore:
		// Deleted again, after it was written over: what it held before
		// the session is known.
	case had:
		// What it was deleted with is the file after the session's own
		// patches, not what it held before the session.
		f.noBody = "its content before the session's patches is not in the rollout"
		return
	default:
		lines = splitLines(old)
		f.before, f.hasBefore = lines, true
	}
	if len(lines) > 0 {
		f.body.WriteString(codexFrag(hunkRange(1, len(lines)), hunkRange(1, 0), color))
	}
	writeContentLines(&f.body, '-', lines, color)
	f.removed = len(lines)
}

// codexMoved: an update moved f to p. Codex writes the file at p and
// removes it where it was: the diff says what the disk then holds. A path
// the file had before the session is gone; p, if it existed before the
// session (the diff changed or deleted it), now holds the file moved,
// written over it; else the file is renamed to p (or new there, if the
// session added it).
func codexMoved(files map[string]*rolloutFile, f *rolloutFile, p string, color bool) {
	from := f.path
	if from == p {
		return // moved onto itself: Codex writes it in place
	}
	delete(files, from)
	if f.movedFrom == "" && f.status != "added" {
		f.movedFrom = from
	}
	codexReclaim(files, p, color) // (another file moved away from p)
	g, taken := files[p]
	if taken && g.movedFrom != "" {
		// Moved here before: the file it moved is still gone from where
		// it was, and is not at p now either.
		codexGone(files, g.movedFrom, g, color)
		g.movedFrom = ""
	} else if taken && g.status != "added" {
		// p existed before the session: what it holds now is the file
		// moved over it, and the path that file had is gone.
		if f.movedFrom != "" {
			codexGone(files, f.movedFrom, f, color)
		}
		if f.isKnown {
			var content []byte
			for _, l := range f.known {
				content = append(append(content, l...), '\n')
			}
			codexAdded(files, p, content, color)
			return
		}
		g.status, g.patches, g.isKnown, g.overwritten = "modified", g.patches+1, false, false
		g.whole = g.patches
		g.body.Reset()
		g.added, g.removed, g.noLineNumbers = 0, 0, false
		g.noBody = fmt.Sprintf("written over by %s, moved here, whose content the rollout does not hold whole", from)
		return
	}
	if f.movedFrom == p {
		f.movedFrom = "" // moved back
	}
	f.path = p
	files[p] = f
}

// codexGone: the file that was at p before the session, which moved away
// as f, is gone from p: a deletion, shown with the content it had when the
// rollout holds it (f's before).
func codexGone(files map[string]*rolloutFile, p string, f *rolloutFile, color bool) {
	if _, taken := files[p]; taken {
		return // written again since: that record says what p holds
	}
	var old []byte
	if f.hasBefore {
		old = []byte(strings.Join(f.before, ""))
		if old == nil {
			old = []byte{}
		}
	}
	codexRemoved(files, p, old, color)
}

// codexReclaim: a patch writes p, which the session had moved away (a
// file's changes say it moved from p). p existed before the session: it
// is written again, not new, and what the diff knows of its content
// before goes with it. Where the file moved is then a new file, no
// rename (both paths are on disk): shown whole when its lines are known,
// else with no body.
func codexReclaim(files map[string]*rolloutFile, p string, color bool) {
	if _, ok := files[p]; ok {
		return
	}
	for _, r := range files {
		if r.movedFrom != p {
			continue
		}
		files[p] = &rolloutFile{path: p, status: "modified", before: r.before, hasBefore: r.hasBefore}
		r.movedFrom, r.status, r.before, r.hasBefore, r.overwritten = "", "added", nil, false, false
		r.body.Reset()
		r.added, r.removed, r.noLineNumbers = 0, 0, false
		r.whole = r.patches
		if !r.isKnown {
			r.noBody = fmt.Sprintf("a copy of %s as it was before the session, changed by patches: the rollout does not hold it whole", p)
			return
		}
		if len(r.known) > 0 {
			r.body.WriteString(codexFrag(hunkRange(1, 0), hunkRange(1, len(r.known)), color))
		}
		for _, l := range r.known {
			writeContentLines(&r.body, '+', []string{l + "\n"}, color)
		}
		r.added = len(r.known)
		return
	}
}

// codexFrag is a hunk header.
func codexFrag(old, new string, color bool) string {
	h := "@@ -" + old + " +" + new + " @@"
	if color {
		h = colorFrag + h + colorReset
	}
	return h + "\n"
}

// writeContentLines writes a file's lines each after sign, as a hunk does,
// with git's mark after a last line with no newline.
func writeContentLines(buf *bytes.Buffer, sign byte, lines []string, color bool) {
	for _, l := range lines {
		s := string(sign) + patchText(strings.TrimSuffix(l, "\n"), color)
		if color {
			c := colorNew
			if sign == '-' {
				c = colorOld
			}
			s = c + s + colorReset
		}
		buf.WriteString(s + "\n")
		if !strings.HasSuffix(l, "\n") {
			buf.WriteString("\\ No newline at end of file\n")
		}
	}
}

// writeUnifiedHunks writes the hunks of a unified diff a patch_apply_end
// holds (its ---/+++ lines before the first hunk, if any, left out: the
// section has its own),
// and counts the lines added and removed.
func writeUnifiedHunks(buf *bytes.Buffer, diff string, color bool) (added, removed int) {
	lines := strings.Split(strings.TrimSuffix(diff, "\n"), "\n")
	inHunk := false // (a line of a hunk may read "--- ": a removed "-- ")
	for _, l := range lines {
		if !inHunk && (strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ")) {
			continue
		}
		switch {
		case strings.HasPrefix(l, "@@"):
			inHunk = true
			if color {
				// (after the @@, the rollout's text: a file's line)
				l = colorFrag + patchText(l, color) + colorReset
			}
			buf.WriteString(l + "\n")
			continue
		case strings.HasPrefix(l, "+"):
			added++
		case strings.HasPrefix(l, "-"):
			removed++
		}
		writeDiffLines(buf, []string{l}, color)
	}
	return added, removed
}

// applyUnifiedHunks applies a patch_apply_end's unified diff to a file's
// lines (without their newlines; the file ends with one): each hunk's old
// lines must be the file's at the line its header names, exactly, the
// hunks in order, their counts as their headers say. ok is false when
// they are not, or the diff holds what rook does not apply here (a
// "\ No newline at end of file" mark, a line of no kind): the lines are
// not known then. A diff with no hunk changes nothing.
func applyUnifiedHunks(lines []string, diff string) ([]string, bool) {
	var out []string
	at := 0 // lines[:at] are done
	dl := strings.Split(strings.TrimSuffix(diff, "\n"), "\n")
	if diff == "" {
		dl = nil
	}
	i := 0
	for i < len(dl) && !strings.HasPrefix(dl[i], "@@") {
		if !strings.HasPrefix(dl[i], "--- ") && !strings.HasPrefix(dl[i], "+++ ") {
			return nil, false
		}
		i++
	}
	for i < len(dl) {
		oldStart, oldN, newN, ok := parseHunkHeader(dl[i])
		if !ok {
			return nil, false
		}
		i++
		var old, new []string
		for ; i < len(dl) && !strings.HasPrefix(dl[i], "@@"); i++ {
			l := dl[i]
			switch {
			case l == "":
				old, new = append(old, ""), append(new, "") // an empty kept line, its space lost
			case l[0] == ' ':
				old, new = append(old, l[1:]), append(new, l[1:])
			case l[0] == '-':
				old = append(old, l[1:])
			case l[0] == '+':
				new = append(new, l[1:])
			default:
				return nil, false
			}
		}
		if len(old) != oldN || len(new) != newN {
			return nil, false
		}
		pos := oldStart - 1
		if oldN == 0 {
			pos = oldStart // (an insertion's header names the line before it)
		}
		if pos < at || pos > len(lines) || oldN > len(lines)-pos || !slices.Equal(lines[pos:pos+oldN], old) {
			return nil, false
		}
		out = append(append(out, lines[at:pos]...), new...)
		at = pos + oldN
	}
	return append(out, lines[at:]...), true
}

// parseHunkHeader reads "@@ -a,b +c,d @@ ..." (a count left out is 1).
func parseHunkHeader(h string) (oldStart, oldN, newN int, ok bool) {
	rest, ok := strings.CutPrefix(h, "@@ -")
	if !ok {
		return 0, 0, 0, false
	}
	rng, rest, ok := strings.Cut(rest, " +")
	if !ok {
		return 0, 0, 0, false
	}
	nrng, _, ok := strings.Cut(rest, " @@")
	if !ok {
		return 0, 0, 0, false
	}
	read := func(r string) (start, n int, ok bool) {
		s, c, has := strings.Cut(r, ",")
		start, err := strconv.Atoi(s)
		if err != nil || start < 0 {
			return 0, 0, false
		}
		n = 1
		if has {
			if n, err = strconv.Atoi(c); err != nil || n < 0 {
				return 0, 0, false
			}
		}
		return start, n, true
	}
	oldStart, oldN, ok1 := read(rng)
	_, newN, ok2 := read(nrng)
	return oldStart, oldN, newN, ok1 && ok2
}

// codexWorkspace says whether a session holds a Codex rollout's lines (an
// imported Codex session, or a fork of one), and its workspace.
func (r *Rook) codexWorkspace(id eventlog.ID) (string, bool) {
	m, err := r.Log.ReadMeta(id)
	if err != nil {
		return "", false
	}
	if src := r.ImportedFrom(m); src == nil || src.Format != FormatCodex {
		return "", false
	}
	ws := m.Workspace
	if strings.HasPrefix(ws, "/") {
		ws = path.Clean(ws)
	}
	return ws, true
}

// applyCodexChunks applies an update's chunks to a file's lines (without
// their newlines) as Codex's apply does (codex-rs/apply-patch,
// compute_replacements and seek_sequence, read for the rules; nothing of
// it is copied): each chunk is sought in the file as it was before the
// patch, after the line its context names and after the chunk before; one
// that adds only goes at the end of the file (before a last empty line),
// and moves nothing on; one at the end of the file is sought there only;
// a removed or kept empty last line the file lacks is dropped and sought
// again. Then Codex writes the file with one newline at its end: a last
// empty line goes. ok is false when a chunk is not found: the lines are
// not known then.
func applyCodexChunks(lines []string, chunks []codexChunk) ([]string, bool) {
	type repl struct {
		at, n int
		new   []string
	}
	var rs []repl
	at := 0
	for _, c := range chunks {
		var old, new []string
		for _, l := range c.Lines {
			switch l[0] {
			case '-':
				old = append(old, l[1:])
			case '+':
				new = append(new, l[1:])
			default:
				old, new = append(old, l[1:]), append(new, l[1:])
			}
		}
		if c.Context != "" {
			i := seekLines(lines, []string{c.Context}, at, false)
			if i < 0 {
				return nil, false
			}
			at = i + 1
		}
		if len(old) == 0 {
			end := len(lines)
			if end > 0 && lines[end-1] == "" {
				end--
			}
			rs = append(rs, repl{end, 0, new})
			continue
		}
		i := seekLines(lines, old, at, c.EOF)
		if i < 0 && old[len(old)-1] == "" {
			old = old[:len(old)-1]
			if len(new) > 0 && new[len(new)-1] == "" {
				new = new[:len(new)-1]
			}
			i = seekLines(lines, old, at, c.EOF)
		}
		if i < 0 {
			return nil, false
		}
		rs = append(rs, repl{i, len(old), new})
		at = i + len(old)
	}
	sort.SliceStable(rs, func(a, b int) bool { return rs[a].at < rs[b].at })
	out := append([]string(nil), lines...)
	for k := len(rs) - 1; k >= 0; k-- {
		r := rs[k]
		// (Codex removes what is there of the old lines, then inserts.)
		end := min(r.at+r.n, len(out))
		start := min(r.at, len(out))
		out = append(out[:start], append(append([]string(nil), r.new...), out[end:]...)...)
	}
	if n := len(out); n > 0 && out[n-1] == "" {
		out = out[:n-1]
	}
	return out, true
}

// seekLines finds pat in lines at or after from (for a chunk at the end
// of the file, at the end only), as Codex's seek_sequence does: exactly,
// else without trailing spaces, else without spaces around, else with
// typographic dashes, quotes and spaces read as ASCII ones; -1 if not.
func seekLines(lines, pat []string, from int, eof bool) int {
	if len(pat) == 0 {
		return from
	}
	if len(pat) > len(lines) {
		return -1
	}
	if eof {
		from = len(lines) - len(pat)
	}
	for _, norm := range []func(string) string{
		func(s string) string { return s },
		func(s string) string { return strings.TrimRightFunc(s, unicode.IsSpace) },
		strings.TrimSpace,
		func(s string) string { return codexPunct.Replace(strings.TrimSpace(s)) },
	} {
		for i := from; i+len(pat) <= len(lines); i++ {
			match := true
			for j, p := range pat {
				if norm(lines[i+j]) != norm(p) {
					match = false
					break
				}
			}
			if match {
				return i
			}
		}
	}
	return -1
}

// codexPunct reads typographic dashes, quotes and spaces as ASCII ones,
// as Codex's last try at finding a chunk does.
var codexPunct = strings.NewReplacer(
	"\u2010", "-", "\u2011", "-", "\u2012", "-", "\u2013", "-", "\u2014", "-", "\u2015", "-", "\u2212", "-",
	"\u2018", "'", "\u2019", "'", "\u201A", "'", "\u201B", "'",
	"\u201C", `"`, "\u201D", `"`, "\u201E", `"`, "\u201F", `"`,
	"\u00A0", " ", "\u2002", " ", "\u2003", " ", "\u2004", " ", "\u2005", " ", "\u2006", " ",
	"\u2007", " ", "\u2008", " ", "\u2009", " ", "\u200A", " ", "\u202F", " ", "\u205F", " ", "\u3000", " ",
)
