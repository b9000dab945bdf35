// Package codexgen generates Codex rollouts (JSONL) for benchmarks and
// tests: rook has no corpus of real ones to share.
package codexgen

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Rollout is one generated rollout file.
type Rollout struct {
	Path string // under a sessions directory: YYYY/MM/DD/rollout-<time>-<uuid>.jsonl
	Data []byte
}

// Rollouts are generated Codex rollouts, ~15 MB in 14 files of 0.2 to
// 2.5 MB: the line types and shapes of real ones (peers.md, section 3.2;
// agent/testdata/codex) in about their proportions. Reasoning with
// encrypted content, shell and apply_patch calls with their outputs (some
// files read more than once), a token_count after each response and again
// when only the rate limits moved; a subagent, a fork. The same bytes on
// every run (a fixed seed), generated once: callers must not modify them.
func Rollouts() []Rollout { return rollouts() }

var rollouts = sync.OnceValue(generate)

const rolloutCount = 14

func generate() []Rollout {
	g := codexGen{rng: rand.New(rand.NewPCG(0x636f646578, 1))}
	g.files = make([]string, 60)
	for i := range g.files {
		g.files[i] = g.sourceFile(i)
	}
	g.base = g.prose(9000, "You are Codex, a coding agent based on GPT-5. You and the user share the same workspace and collaborate to achieve the user's goals.\n\n")
	g.agents = "# AGENTS.md instructions for /home/dev/rook\n\n<INSTRUCTIONS>\n" + g.prose(1400, "## Repository rules\n\n") + "\n</INSTRUCTIONS>"
	g.perms = "<permissions instructions>\n" + g.prose(900, "Filesystem sandboxing defines which files can be read or written. ") + "\n</permissions instructions>"
	var out []Rollout
	var prev string
	start := time.Date(2026, 1, 5, 9, 12, 7, 0, time.UTC)
	for i := range rolloutCount {
		turns := 5 + g.rng.IntN(16)
		if i%5 == 2 {
			turns = 2 // a quick question
		}
		var parent, forkedFrom string
		switch i % 5 {
		case 4:
			parent = prev // a subagent of the session before
		case 3:
			forkedFrom = prev
		}
		at := start.Add(time.Duration(i) * 7 * time.Hour)
		id := g.uuid(at)
		out = append(out, Rollout{
			Path: at.Format("2006/01/02") + "/rollout-" + at.Format("2006-01-02T15-04-05") + "-" + id + ".jsonl",
			Data: g.rollout(id, parent, forkedFrom, at, turns),
		})
		prev = id
	}
	return out
}

// codexGen writes rollouts.
type codexGen struct {
	rng    *rand.Rand
	files  []string // source files the sessions read, some more than once
	base   string   // base_instructions, the same in every session
	agents string   // AGENTS.md, as user_instructions and a user message
	perms  string

	b     []byte    // the rollout being written
	at    time.Time // the time of its last line
	model string
	total [4]uint64 // input, cached, output, reasoning tokens so far
	calls int
}

// words are what prose and code are made of: the repository's vocabulary.
var words = strings.Fields(`the a of to in and is for that on with as it be by this are or from at an not
	log event store index chunk session import source line file key value object cut kind record append
	read write sync flush commit lock writer reader cache block offset length hash blake3 zstd frame
	error nil return func var const type struct map slice string byte uint64 int context test race
	checkpoint rewind restore transcript mapper view scan member token usage model turn call output
	because when before after only every each first last next previous whole part shortened long`)

func (g *codexGen) word() string { return words[g.rng.IntN(len(words))] }

// prose is about n bytes of sentences after head.
func (g *codexGen) prose(n int, head string) string {
	var s strings.Builder
	s.WriteString(head)
	for s.Len() < n {
		s.WriteString(capital(g.word()))
		for range 6 + g.rng.IntN(14) {
			s.WriteString(" " + g.word())
		}
		s.WriteString(". ")
		if g.rng.IntN(5) == 0 {
			s.WriteString("\n\n- ")
		}
	}
	return s.String()
}

func capital(w string) string { return strings.ToUpper(w[:1]) + w[1:] }

// sourceFile is a Go file of some hundreds of lines.
func (g *codexGen) sourceFile(n int) string {
	var s strings.Builder
	fmt.Fprintf(&s, "package %s\n\nimport (\n\t\"bytes\"\n\t\"fmt\"\n)\n\n", g.word())
	for i := range 3 + g.rng.IntN(22) {
		a, b := g.word(), g.word()
		fmt.Fprintf(&s, "// %s%d %s the %s of a %s: %s %s.\n", a, i, g.word(), b, g.word(), g.word(), g.word())
		fmt.Fprintf(&s, "func (l *Log) %s%d(%s []byte, n int) (int, error) {\n", a, i, b)
		for range 2 + g.rng.IntN(6) {
			fmt.Fprintf(&s, "\tif err := l.%s(%s[%d:], %q); err != nil {\n\t\treturn 0, fmt.Errorf(\"%s: %%w\", err)\n\t}\n", g.word(), b, g.rng.IntN(64), g.word(), g.word())
		}
		fmt.Fprintf(&s, "\treturn len(%s) + n, nil // file %d\n}\n\n", b, n)
	}
	return s.String()
}

func (g *codexGen) hex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[g.rng.IntN(16)]
	}
	return string(b)
}

// uuid is a v7 UUID for time at.
func (g *codexGen) uuid(at time.Time) string {
	ms := fmt.Sprintf("%012x", at.UnixMilli())
	return ms[:8] + "-" + ms[8:] + "-7" + g.hex(3) + "-" + string("89ab"[g.rng.IntN(4)]) + g.hex(3) + "-" + g.hex(12)
}

func (g *codexGen) callID() string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := []byte("call_")
	for range 24 {
		b = append(b, alnum[g.rng.IntN(len(alnum))])
	}
	return string(b)
}

// encrypted is an encrypted_content blob of about n bytes: random, as the
// real ones are.
func (g *codexGen) encrypted(n int) string {
	raw := make([]byte, n*3/4)
	for i := range raw {
		raw[i] = byte(g.rng.Uint32())
	}
	return "gAAAAAB" + base64.StdEncoding.EncodeToString(raw)
}

// line appends one rollout line, d after the previous one.
func (g *codexGen) line(d time.Duration, typ string, payload js) {
	g.at = g.at.Add(d)
	g.b = append(g.b, obj("timestamp", g.at.Format("2006-01-02T15:04:05.000Z"), "type", typ, "payload", payload)...)
	g.b = append(g.b, '\n')
}

func (g *codexGen) ms(lo, hi int) time.Duration {
	return time.Duration(lo+g.rng.IntN(hi-lo+1)) * time.Millisecond
}

// rollout is one session of turns; parent, if set, makes it a subagent,
// forkedFrom a fork.
func (g *codexGen) rollout(id, parent, forkedFrom string, at time.Time, turns int) []byte {
	g.b, g.at, g.total = nil, at, [4]uint64{}
	g.model = "gpt-5.2-codex"
	var source any = "cli"
	if parent != "" {
		g.model = "gpt-5.2-codex-mini"
		source = obj("subagent", obj("thread_spawn", obj("parent_thread_id", parent, "depth", 1, "agent_role", "explorer", "agent_nickname", "scout")))
	}
	cwd := "/home/dev/rook"
	meta := []any{"id", id}
	if forkedFrom != "" {
		meta = append(meta, "forked_from_id", forkedFrom)
	}
	meta = append(meta, "timestamp", at.Format("2006-01-02T15:04:05.000Z"), "cwd", cwd,
		"originator", "codex_cli_rs", "cli_version", "0.80.0", "source", source, "model_provider", "openai",
		"base_instructions", obj("text", g.base),
		"git", obj("commit_hash", g.hex(40), "branch", "main", "repository_url", "git@github.com:rookhq/rook.git"))
	g.line(0, "session_meta", obj(meta...))
	g.line(g.ms(3, 9), "response_item", g.message("developer", "input_text", g.perms))
	g.line(g.ms(1, 2), "response_item", g.message("user", "input_text", g.agents))
	env := "<environment_context>\n  <cwd>" + cwd + "</cwd>\n  <approval_policy>on-request</approval_policy>\n  <sandbox_mode>workspace-write</sandbox_mode>\n  <network_access>restricted</network_access>\n  <shell>bash</shell>\n</environment_context>"
	g.line(g.ms(1, 2), "response_item", g.message("user", "input_text", env))
	for t := range turns {
		if t == 12 {
			g.compact()
		}
		g.turn(t, cwd)
	}
	return g.b
}

func (g *codexGen) message(role, kind, text string) js {
	return obj("type", "message", "role", role, "content", arr(obj("type", kind, "text", text)))
}

// turn is a prompt, the steps that answer it, and the reply.
func (g *codexGen) turn(t int, cwd string) {
	turnID := g.uuid(g.at)
	g.line(g.ms(2000, 60000), "turn_context", obj("turn_id", turnID, "cwd", cwd, "approval_policy", "on-request",
		"sandbox_policy", obj("type", "workspace-write", "network_access", false, "exclude_tmpdir_env_var", false, "exclude_slash_tmp", false),
		"model", g.model, "effort", "medium", "summary", "auto", "user_instructions", g.agents))
	prompt := "  \n" + g.prose(60+g.rng.IntN(500), "Fix the "+g.word()+" in "+g.word()+" — ")
	g.line(g.ms(5, 20), "response_item", g.message("user", "input_text", prompt))
	g.line(g.ms(1, 2), "event_msg", obj("type", "user_message", "message", prompt, "images", arr()))
	g.line(g.ms(5, 10), "event_msg", obj("type", "task_started", "model_context_window", 272000))
	if t == 0 {
		g.line(g.ms(300, 900), "event_msg", obj("type", "token_count", "info", nil, "rate_limits", g.rateLimits()))
	}
	for range 3 + g.rng.IntN(14) {
		g.step(turnID)
	}
	switch g.rng.IntN(24) {
	case 0, 1:
		g.line(g.ms(1000, 30000), "event_msg", obj("type", "stream_error", "message", "Reconnecting... 1/5"))
	case 2:
		g.line(g.ms(1000, 30000), "event_msg", obj("type", "turn_aborted", "reason", "interrupted"))
		return
	}
	reply := g.prose(200+g.rng.IntN(1500), "Done: ")
	g.line(g.ms(2000, 9000), "event_msg", obj("type", "agent_message", "message", reply))
	g.line(g.ms(1, 2), "response_item", obj("type", "message", "role", "assistant", "content", arr(obj("type", "output_text", "text", reply))))
	g.tokenCount()
	g.line(g.ms(50, 200), "event_msg", obj("type", "task_complete", "last_agent_message", reply[:40]))
}

// compact is what a long session's context compaction writes: the
// history it keeps, then the event.
func (g *codexGen) compact() {
	kept := arr(g.message("user", "input_text", g.prose(300, "Fix the ")), obj("type", "compaction", "encrypted_content", g.encrypted(6000)))
	g.line(g.ms(500, 3000), "compacted", obj("message", "", "replacement_history", kept))
	g.line(g.ms(1, 2), "event_msg", obj("type", "context_compacted"))
}

// step is a reasoning and one tool call with its output.
func (g *codexGen) step(turnID string) {
	heading := "**" + capital(g.word()) + " the " + g.word() + "**"
	g.line(g.ms(1500, 12000), "event_msg", obj("type", "agent_reasoning", "text", heading))
	g.line(g.ms(1, 2), "response_item", obj("type", "reasoning",
		"summary", arr(obj("type", "summary_text", "text", heading+"\n\n"+g.prose(100+g.rng.IntN(400), ""))),
		"content", nil, "encrypted_content", g.encrypted(800+g.rng.IntN(4400))))
	call := g.callID()
	g.calls++
	switch n := g.rng.IntN(20); {
	case n < 12: // a shell command: a file read (some twice), a search, the tests
		var cmd, out string
		switch f := g.rng.IntN(len(g.files)); {
		case n < 7:
			cmd = fmt.Sprintf("sed -n 1,400p eventlog/%s%d.go", words[f], f)
			out = g.files[f]
		case n < 10:
			cmd = "rg -n " + g.word() + " agent/"
			var s strings.Builder
			for range 5 + g.rng.IntN(60) {
				fmt.Fprintf(&s, "agent/%s.go:%d:\t%s %s(%s)\n", g.word(), 1+g.rng.IntN(900), g.word(), g.word(), g.word())
			}
			out = s.String()
		default:
			cmd = "go test -count=1 ./" + g.word() + "/"
			out = g.prose(100+g.rng.IntN(3000), "--- FAIL: Test"+g.word()+" (0.41s)\n") + "\nFAIL\n"
		}
		args := obj("command", cmd, "workdir", "/home/dev/rook", "timeout_ms", 120000)
		g.line(g.ms(50, 400), "response_item", obj("type", "function_call", "name", "shell_command", "arguments", string(args), "call_id", call))
		g.tokenCount()
		if g.rng.IntN(4) == 0 {
			g.rateLimitsOnly()
		}
		out = fmt.Sprintf("Exit code: 0\nWall time: %.1f seconds\nOutput:\n", float64(g.rng.IntN(50))/10) + out
		g.line(g.ms(100, 5000), "response_item", obj("type", "function_call_output", "call_id", call, "output", out))
	case n < 17: // an edit
		f := g.rng.IntN(len(g.files))
		lines := strings.Split(g.files[f], "\n")
		from := g.rng.IntN(len(lines))
		to := min(len(lines), from+20+g.rng.IntN(160))
		patch := fmt.Sprintf("*** Begin Patch\n*** Update File: eventlog/%s%d.go\n@@\n", words[f], f)
		for _, l := range lines[from:to] {
			if g.rng.IntN(3) == 0 {
				patch += "-" + l + "\n+" + l + " // " + g.word() + "\n"
			} else {
				patch += " " + l + "\n"
			}
		}
		patch += "*** End Patch"
		g.line(g.ms(50, 400), "response_item", obj("type", "custom_tool_call", "status", "completed", "call_id", call, "name", "apply_patch", "input", patch))
		g.tokenCount()
		stdout := fmt.Sprintf("Success. Updated the following files:\nM eventlog/%s%d.go\n", words[f], f)
		g.line(g.ms(100, 300), "event_msg", obj("type", "patch_apply_end", "call_id", call, "turn_id", turnID, "stdout", stdout, "stderr", "", "success", true))
		g.line(g.ms(1, 2), "response_item", obj("type", "custom_tool_call_output", "call_id", call,
			"output", string(obj("output", stdout, "metadata", obj("exit_code", 0, "duration_seconds", 0.0)))))
	default: // the plan
		plan := obj("plan", arr(obj("step", g.prose(40, "Reproduce "), "status", "completed"), obj("step", g.prose(40, "Fix "), "status", "in_progress")))
		g.line(g.ms(50, 400), "response_item", obj("type", "function_call", "name", "update_plan", "arguments", string(plan), "call_id", call))
		g.tokenCount()
		g.line(g.ms(5, 20), "response_item", obj("type", "function_call_output", "call_id", call, "output", "Plan updated"))
	}
}

func (g *codexGen) rateLimits() js {
	used := float64(g.calls%100) / 2
	return obj("primary", obj("used_percent", used, "window_minutes", 300, "resets_at", g.at.Unix()+9000),
		"secondary", obj("used_percent", used/10, "window_minutes", 10080, "resets_at", g.at.Unix()+500000),
		"credits", obj("has_credits", false, "unlimited", false, "balance", nil), "plan_type", "plus")
}

// tokenCount is the token_count after a response: this one's usage and
// the session's so far.
func (g *codexGen) tokenCount() {
	last := [4]uint64{uint64(8000 + g.rng.IntN(120000)), 0, uint64(20 + g.rng.IntN(2000)), 0}
	last[1] = last[0] * uint64(60+g.rng.IntN(35)) / 100
	last[3] = last[2] / 2
	for i := range g.total {
		g.total[i] += last[i]
	}
	g.line(g.ms(5, 20), "event_msg", g.tokenPayload(last))
}

// rateLimitsOnly is the token_count Codex writes again when only the rate
// limits moved: the same usage.
func (g *codexGen) rateLimitsOnly() {
	g.calls++
	g.line(g.ms(5, 20), "event_msg", g.tokenPayload([4]uint64{}))
}

func (g *codexGen) tokenPayload(last [4]uint64) js {
	usage := func(u [4]uint64) js {
		return obj("input_tokens", u[0], "cached_input_tokens", u[1], "output_tokens", u[2], "reasoning_output_tokens", u[3], "total_tokens", u[0]+u[2])
	}
	return obj("type", "token_count", "info", obj("total_token_usage", usage(g.total), "last_token_usage", usage(last), "model_context_window", 258400),
		"rate_limits", g.rateLimits())
}

// js is encoded JSON. obj and arr write objects (keys in the order given,
// as serde_json writes a struct) and arrays.
type js []byte

func obj(kv ...any) js {
	b := js{'{'}
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendValue(b, kv[i])
		b = append(b, ':')
		b = appendValue(b, kv[i+1])
	}
	return append(b, '}')
}

func arr(vs ...any) js {
	b := js{'['}
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendValue(b, v)
	}
	return append(b, ']')
}

func appendValue(b js, v any) js {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case js:
		return append(b, v...)
	case string:
		return appendString(b, v)
	case bool:
		return strconv.AppendBool(b, v)
	case int:
		return strconv.AppendInt(b, int64(v), 10)
	case int64:
		return strconv.AppendInt(b, v, 10)
	case uint64:
		return strconv.AppendUint(b, v, 10)
	case float64:
		return strconv.AppendFloat(b, v, 'f', 1, 64)
	}
	j, err := json.Marshal(v)
	if err != nil {
		return append(b, "null"...) // no generator value fails: the types above are all it writes
	}
	return append(b, j...)
}

// appendString quotes s as serde_json does: only quotes, backslashes and
// control characters escaped, other text (<, &, non-ASCII) as it is.
func appendString(b js, s string) js {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c < 0x20:
			b = append(b, fmt.Sprintf(`\u%04x`, c)...)
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
