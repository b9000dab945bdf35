package agent

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

// A Codex subagent's patches and commands are in its own rollout,
// imported as a child session of its parent's: a rewind of the parent
// reads them there (codexFamilyOf). Once that child is removed (session
// rm, retention), or when its rollout was never imported, nothing in
// rook links it to the parent. The parent's spawn_agent output still
// names it ({"agent_id": "<thread id>"}, codexSpawnedIDs), and its
// rollout is imported under that thread id (childSourceID): a thread a
// spawn_agent output of the family names that no imported session linked
// to it holds wrote what is not known. A Codex subagent runs on its own:
// spawn_agent returns at once, and it may write long after, well past
// the rewind point, whenever it was spawned; nor does its parent's
// rollout say for sure when it is done (a completed wait says its turn
// ended, yet send_input starts another, and the subagents it spawned may
// still run). So it counts as a write of any file at any time from its
// spawn_agent call on (codexOtherWrite.since), as a parent removed since
// does: what the rollout says a file held before that stands; the undo
// of patches on the disk as it is now, any state after it, is refused.

// codexMissingSubagents are the writes of the subagents spawn_agent
// outputs of the sessions of family lf (its line, then its members) name
// that no imported session linked to it holds (lf.sources), each once,
// from its earliest spawn; id is the session rewound.
func (r *Rook) codexMissingSubagents(id eventlog.ID, lf importedFamily) ([]codexOtherWrite, error) {
	miss, _, err := r.codexMissingSpawns(id, lf, append(append([]eventlog.ID{}, lf.line...), lf.members...))
	if err != nil {
		return nil, err
	}
	var out []codexOtherWrite
	for _, s := range miss {
		whose := "this session"
		if s.session != id {
			whose = "session " + s.session.String()
		}
		when := "its call's time not read: at any time"
		if !s.at.IsZero() {
			when = "from " + s.at.UTC().Format("2006-01-02 15:04:05.000") + " on"
		}
		// (Where it worked is not known: its session is not here.)
		why := fmt.Sprintf("the Codex subagent %s, spawned by the spawn_agent call whose output is event #%d of %s, is in no imported session linked to it: its session was removed from rook since (session rm), or its rollout was never imported, and it may have written the workspace's files, on its own, %s, so what it wrote is not known", s.agent, s.seq, whose, when)
		if s.path != "" {
			why += fmt.Sprintf("; import its rollout again (`rook import codex %s`: it is linked to its parent) and run this again", ShellQuote(s.path))
		} else {
			why += fmt.Sprintf("; its rollout (rollout-*-%s.jsonl, .zst too) is not found beside the rollouts of the sessions linked to it (Codex writes them under ~/.codex/sessions/YYYY/MM/DD): import it if you find it (`rook import codex <its file>`: it is linked to its parent) and run this again", s.agent)
		}
		out = append(out, codexOtherWrite{session: s.session, seq: s.seq, at: s.at, since: true, sinceWhy: why})
	}
	return out, nil
}

// codexMissingSpawns reads the spawn_agent outputs of sessions (in
// order) of family lf: the subagents they name that no imported session
// linked to it holds (lf.sources), each once, at its earliest spawn, with
// its rollout when it is found (codexRolloutOf); and reported, the thread
// of every subagent they name, held or not. id is the session asked of
// (another of sessions removed since is passed over: its fork holds its
// events).
func (r *Rook) codexMissingSpawns(id eventlog.ID, lf importedFamily, sessions []eventlog.ID) (miss []missingSubagent, reported map[string]bool, err error) {
	first := map[string]missingSubagent{}
	reported = map[string]bool{}
	var order []string
	for _, s := range sessions {
		callAt := map[string]time.Time{}
		for from := uint64(0); ; {
			evs, err := r.Log.Read(s, from, 1024)
			if err != nil {
				if from == 0 && s != id && errors.Is(err, eventlog.ErrNoSession) {
					break // (removed since: its fork holds its events before the point)
				}
				return nil, nil, err
			}
			if len(evs) == 0 {
				break
			}
			for _, ev := range evs {
				switch {
				case ev.Kind == eventlog.KindToolCall && ev.Label == "spawn_agent":
					for _, p := range r.codexPayloads(ev.Body, "") {
						if p.CallID != "" {
							callAt[p.CallID] = ev.Time
						}
					}
				case ev.Kind == eventlog.KindToolResult && !noCodexSubagents[ev.Label]:
					need := "agent_id"
					if ev.Label == "spawn_agent" {
						need = ""
					}
					for _, p := range r.codexPayloads(ev.Body, need) {
						for _, th := range codexSpawnedIDs(p.Output) {
							reported[th] = true
							if lf.sources[th] {
								continue
							}
							sp := missingSubagent{agent: th, session: s, seq: ev.Seq, at: callAt[p.CallID]}
							if sp.at.After(ev.Time) {
								sp.at = time.Time{}
							}
							prev, ok := first[th]
							if !ok {
								order = append(order, th)
							}
							if !ok || sp.at.Before(prev.at) {
								first[th] = sp
							}
						}
					}
				}
			}
			from = evs[len(evs)-1].Seq + 1
		}
	}
	for _, th := range order {
		sp := first[th]
		sp.path = r.codexRolloutOf(lf, th)
		miss = append(miss, sp)
	}
	return miss, reported, nil
}

// codexPayloads are the Codex items of an imported event's body; none
// when it does not read, or (need set) its stored line does not hold
// need (keys are never cut out of a line, nor a string as short as an
// id).
func (r *Rook) codexPayloads(body cas.Key, need string) []codexPatchPayload {
	lines, err := r.importedLines(body, func(rest []byte) bool { return need == "" || bytes.Contains(rest, []byte(need)) })
	if err != nil {
		return nil
	}
	var out []codexPatchPayload
	for _, line := range lines {
		if p, ok := codexPatchPayloadOf(entryBytes(trimNewline(line))); ok {
			out = append(out, p)
		}
	}
	return out
}

// codexRolloutOf is where the rollout of Codex thread th is: Codex
// writes each under its sessions directory, by day
// (YYYY/MM/DD/rollout-<time>-<thread id>.jsonl, .zst too); looked for
// beside the rollouts of family lf's sessions, and in the days of their
// sessions directory; "" when not found.
func (r *Rook) codexRolloutOf(lf importedFamily, th string) string {
	match := func(n string) bool {
		return strings.HasPrefix(n, "rollout-") && (strings.HasSuffix(n, "-"+th+".jsonl") || strings.HasSuffix(n, "-"+th+".jsonl.zst"))
	}
	in := func(d string) string {
		ents, _ := r.fs.ReadDir(d)
		for _, e := range ents {
			if p := filepath.Join(d, e.Name()); match(e.Name()) && e.Type().IsRegular() {
				return p
			}
		}
		return ""
	}
	seen := map[string]bool{}
	var roots []string
	for _, s := range append(append([]eventlog.ID{}, lf.line...), lf.members...) {
		m, err := r.Log.ReadMeta(s)
		if err != nil || m.Source == nil || m.Source.Path == "" {
			continue
		}
		d := filepath.Dir(m.Source.Path)
		if !seen[d] {
			seen[d] = true
			if p := in(d); p != "" {
				return p
			}
		}
		if root := filepath.Dir(filepath.Dir(filepath.Dir(d))); isDay(d) && !seen["root:"+root] {
			seen["root:"+root] = true
			roots = append(roots, root)
		}
	}
	for _, root := range roots {
		for _, y := range subdirs(r, root, 4) {
			for _, mo := range subdirs(r, y, 2) {
				for _, d := range subdirs(r, mo, 2) {
					if seen[d] {
						continue
					}
					if p := in(d); p != "" {
						return p
					}
				}
			}
		}
	}
	return ""
}

// isDay says whether d ends in YYYY/MM/DD, as Codex's sessions directory
// names its days.
func isDay(d string) bool {
	day, mo, y := filepath.Base(d), filepath.Base(filepath.Dir(d)), filepath.Base(filepath.Dir(filepath.Dir(d)))
	return digits(y, 4) && digits(mo, 2) && digits(day, 2)
}

func digits(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// subdirs are d's directories whose names are n digits.
func subdirs(r *Rook, d string, n int) []string {
	ents, _ := r.fs.ReadDir(d)
	var out []string
	for _, e := range ents {
		if e.IsDir() && digits(e.Name(), n) {
			out = append(out, filepath.Join(d, e.Name()))
		}
	}
	return out
}

// noCodexSubagents are Codex tools whose outputs name no subagent: their
// bodies are not read for one.
var noCodexSubagents = map[string]bool{"apply_patch": true, "shell": true, "shell_command": true, "local_shell": true,
	"exec_command": true, "write_stdin": true, "update_plan": true, "view_image": true, "web_search": true,
	"read_file": true, "list_dir": true, "grep_files": true}
