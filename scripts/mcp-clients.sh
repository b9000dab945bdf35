#!/usr/bin/env bash
# Real-client checks of `rook mcp serve` (issue 8): the MCP Inspector CLI,
# pinned in tools/mcp (make mcp-tools installs it), lists the tool and saves
# a note through the built rook binary, and is refused what must be refused.
#
#   scripts/mcp-clients.sh [ROOK_BINARY]     (make mcp-clients)
#
# Without ROOK_BINARY it builds rook into a temp dir. The store (ROOK_HOME),
# the Inspector's HOME (~/.mcp-inspector) and the wire logs are in a
# throw-away temp dir too (MCP_CLIENTS_KEEP=1 keeps it). Prints `ok   NAME`
# or `FAIL NAME: WHY` per check, then `mcp clients: N passed, N failed`;
# exits non-zero when any check failed.
#
# The Inspector's stdio child gets only HOME, LOGNAME, PATH, SHELL, TERM and
# USER of our environment: everything else (ROOK_HOME, TZ) goes by -e. The
# server runs behind a tee wrapper that records the traffic, which is how
# the checks read what the Inspector does not print (the JSON-RPC error
# code of a refused call).
set -euo pipefail
given=${1-}
[[ -z $given || $given == /* ]] || given=$PWD/$given
cd "$(dirname "$0")/.."
root=$PWD
tools=$root/tools/mcp
node=$tools/node_modules/.bin/node
inspector=$tools/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js

passed=0
failed=0
summary() { echo "mcp clients: $passed passed, $failed failed"; }

# A setup problem is a failed check too, so the count line always appears.
setup_fail() {
	echo "FAIL setup: $1"
	failed=$((failed + 1))
	summary
	exit 1
}

[[ -x $node && -f $inspector ]] ||
	setup_fail "the MCP tools are not installed in tools/mcp: run \`make mcp-tools\` (needs npm)"

work=$(mktemp -d "${TMPDIR:-/tmp}/rook-mcp-clients.XXXXXX")
if [[ ${MCP_CLIENTS_KEEP:-} == 1 ]]; then
	echo "keeping the temp dir $work"
else
	trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work/bin" "$work/home" "$work/wire"
store=$work/store

if [[ -n $given ]]; then
	[[ -f $given && -x $given ]] || setup_fail "$given is not an executable rook binary"
	cp "$given" "$work/bin/rook"
else
	"${GO:-go}" build -o "$work/bin/rook" . 2>"$work/build.log" ||
		setup_fail "go build failed: $(head -c 2000 "$work/build.log")"
fi
rook=$work/bin/rook
ROOK_HOME=$store "$rook" init >/dev/null 2>"$work/init.log" ||
	setup_fail "rook init failed: $(cat "$work/init.log")"

# rook mcp serve behind tee: the client's lines go to $ROOK_MCP_WIRE.in,
# rook's to $ROOK_MCP_WIRE.out. Paths are baked in: the child's PATH is the
# Inspector's.
{
	echo '#!/usr/bin/env bash'
	echo 'set -o pipefail'
	echo 'wire=${ROOK_MCP_WIRE:?}'
	printf '%q -a "$wire.in" | %q mcp serve | %q -a "$wire.out"\n' "$(command -v tee)" "$rook" "$(command -v tee)"
} >"$work/bin/rook-wire"
chmod +x "$work/bin/rook-wire"

inspector_version=$("$node" -p 'require(process.argv[1]).version' "$tools/node_modules/@modelcontextprotocol/inspector/package.json")
echo "using MCP Inspector $inspector_version on node $("$node" --version), rook mcp serve at $rook"

# inspect NAME ARGS...: runs the Inspector CLI against rook mcp serve (JSON
# output, quiet); leaves $w (the wire log prefix), $w.stdout, $w.stderr and
# the exit code in $rc.
inspect() {
	w=$work/wire/$1
	shift
	local -a env=(-e "ROOK_HOME=$store" -e "ROOK_MCP_WIRE=$w")
	[[ -n ${TZ:-} ]] && env+=(-e "TZ=$TZ")
	rc=0
	HOME=$work/home XDG_CONFIG_HOME=$work/home/.config XDG_DATA_HOME=$work/home/.local/share \
		XDG_STATE_HOME=$work/home/.local/state XDG_CACHE_HOME=$work/home/.cache \
		PATH="$tools/node_modules/.bin:$PATH" NO_COLOR=1 \
		timeout 15 "$node" "$inspector" --cli "${env[@]}" "$work/bin/rook-wire" \
		"$@" --format json -q >"$w.stdout" 2>"$w.stderr" </dev/null || rc=$?
}

# js FILE BODY [ARG...]: BODY, a function body, sees v (FILE's JSON) and a
# (the ARGs) and returns a complaint (printed; status 1) or nothing.
js() {
	"$node" -e '
const fs = require("fs");
let v;
try { v = JSON.parse(fs.readFileSync(process.argv[1], "utf8")); }
catch (e) { console.log(`${process.argv[1].replace(/.*\//, "")}: not one JSON value (${e.message})`); process.exit(1); }
let r;
try { r = new Function("v", "a", process.argv[2])(v, process.argv.slice(3)); }
catch (e) { r = "the check itself failed: " + e.message; }
if (r) { console.log(r); process.exit(1); }' "$@"
}

# reply W METHOD: rook's reply to the client's first METHOD request in wire
# log W, as JSON on stdout; status 1 (and why) when there is none. tee may
# write the log a moment after the client has the line: wait up to 3 s.
reply() {
	"$node" -e '
const fs = require("fs");
const [w, method] = process.argv.slice(1);
const lines = (f) => { try { return fs.readFileSync(f, "utf8").split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l)); } catch (e) { return e.code === "ENOENT" ? [] : [{ unparsable: e.message }]; } };
for (let i = 0; ; i++) {
  const req = lines(w + ".in").find((m) => m.method === method && m.id !== undefined);
  if (!req) { console.log(`the client sent no ${method} request`); process.exit(1); }
  const rep = lines(w + ".out").find((m) => m.id === req.id && (m.result !== undefined || m.error !== undefined));
  if (rep) { console.log(JSON.stringify(rep)); process.exit(0); }
  if (i === 30) { console.log(`no reply from rook to ${method} (id ${JSON.stringify(req.id)})`); process.exit(1); }
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
}' "$1" "$2"
}

# details W: what a failed check shows under its FAIL line.
details() {
	if [[ $rc == 124 ]]; then echo "inspector exit code 124: timed out after 15 s"; else echo "inspector exit code $rc"; fi
	echo "inspector stdout: $(head -c 1500 "$1.stdout")"
	echo "inspector stderr: $(head -c 1500 "$1.stderr")"
	echo "client -> rook:"
	head -c 3000 "$1.in" 2>/dev/null || echo "(nothing)"
	echo "rook -> client:"
	head -c 3000 "$1.out" 2>/dev/null || echo "(nothing)"
}

# check NAME FUNC: runs FUNC (in a subshell), which prints why and returns
# non-zero when the check fails; the first line it prints is the reason.
check() {
	local name=$1 why
	if why=$("$2" 2>&1); then
		echo "ok   $name"
		passed=$((passed + 1))
	else
		echo "FAIL $name: ${why%%$'\n'*}"
		[[ $why == *$'\n'* ]] && printf '%s\n' "${why#*$'\n'}" | sed 's/^/    /'
		failed=$((failed + 1))
	fi
	return 0
}

# saves CLIENT: how many notes `rook inbox show CLIENT --json` has today (0
# when the inbox does not exist yet).
saves() {
	local out
	out=$(ROOK_HOME=$store "$rook" inbox show "$1" --json 2>/dev/null) || { echo 0; return; }
	printf '%s' "$out" | "$node" -e 'console.log(JSON.parse(require("fs").readFileSync(0, "utf8")).saves.length)'
}

title="Inspector check $$"
content="Saved by the MCP Inspector through rook mcp serve (token $RANDOM$RANDOM, é ✓)"

# --- the checks ---------------------------------------------------------

check_tools_list() {
	inspect tools-list --method tools/list
	[[ $rc == 0 ]] || { echo "the Inspector exited $rc"; details "$w"; return 1; }
	js "$w.stdout" '
const tools = v.result && v.result.tools;
if (!Array.isArray(tools)) return "no result.tools in the output";
const t = tools.find((t) => t.name === "append_to_inbox");
if (!t) return "append_to_inbox not listed; tools: " + JSON.stringify(tools.map((t) => t.name));
const ann = t.annotations || {};
for (const k of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"])
  if (ann[k] !== false) return `annotations.${k} is ${JSON.stringify(ann[k])}, want false; annotations: ${JSON.stringify(ann)}`;
const s = t.inputSchema || {};
if (!(s.properties && s.properties.content && s.properties.title)) return "inputSchema lacks content or title: " + JSON.stringify(s);
if (!(s.required || []).includes("content")) return "inputSchema does not require content: " + JSON.stringify(s);
' || { details "$w"; return 1; }
}

check_tools_list_strict() {
	inspect tools-list-strict --method tools/list --strict
	[[ $rc == 0 ]] || { echo "the Inspector's schema portability check exited $rc (6: an error-severity problem)"; details "$w"; return 1; }
}

# A dual-era client probes server/discover (2026-07-28) first; rook serves
# only initialize-based revisions, refuses the probe, and the client falls
# back to initialize.
check_era_auto() {
	local r
	inspect era-auto --method tools/list --protocol-era auto
	[[ $rc == 0 ]] || { echo "the Inspector exited $rc"; details "$w"; return 1; }
	js "$w.stdout" '
if (!((v.result || {}).tools || []).some((t) => t.name === "append_to_inbox")) return "append_to_inbox not listed";
' || { details "$w"; return 1; }
	r=$(reply "$w" initialize) || { echo "no initialize after the probe: $r"; details "$w"; return 1; }
}

check_save() {
	local before after
	before=$(date +%F)
	inspect save --method tools/call --tool-name append_to_inbox \
		--tool-args-json "$("$node" -p 'JSON.stringify({content: process.argv[1], title: process.argv[2]})' "$content" "$title")"
	after=$(date +%F)
	[[ $rc == 0 ]] || { echo "the Inspector exited $rc"; details "$w"; return 1; }
	js "$w.stdout" '
const r = v.result || {};
if (r.isError) return "the call returned isError: " + JSON.stringify(r);
const text = (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
const want = [a[0], a[1]].map((day) => `Saved to Rook inbox ${day} under "${a[2]}"`);
if (!want.includes(text)) return `reply text ${JSON.stringify(text)}, want ${JSON.stringify(want[0])}`;
' "$before" "$after" "$title" || { details "$w"; return 1; }
}

# The inbox the Inspector's saves go to: its clientInfo.name, lowercased
# (inbox.Inbox: only claude, codex, cursor and gemini are renamed).
inbox_name() {
	"$node" -e '
const init = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l)).find((m) => m.method === "initialize");
if (!init) { console.log("no initialize in the wire log"); process.exit(1); }
console.log(((init.params.clientInfo || {}).name || "").trim().toLowerCase());' "$work/wire/save.in"
}

check_show() {
	local client out
	client=$(inbox_name) || { echo "$client"; return 1; }
	out=$(ROOK_HOME=$store "$rook" inbox show "$client" 2>&1) || { echo "rook inbox show $client failed: $out"; return 1; }
	[[ $out == *"## $title"* && $out == *"$content"* ]] ||
		{ echo "rook inbox show $client lacks the note (title \"$title\")"; echo "$out"; return 1; }
	out=$(ROOK_HOME=$store "$rook" inbox ls 2>&1) || { echo "rook inbox ls failed: $out"; return 1; }
	[[ $out == *"($client): 1 save(s)"* ]] || { echo "rook inbox ls does not list one save in $client"; echo "$out"; return 1; }
}

check_empty_content() {
	local client n0 n1 r
	client=$(inbox_name 2>/dev/null) || client=inspector-cli
	n0=$(saves "$client")
	inspect empty --method tools/call --tool-name append_to_inbox --tool-args-json '{"content":""}'
	n1=$(saves "$client")
	# A JSON-RPC error: the Inspector prints no result, writes an error
	# envelope with the server's message (but not its code) and exits 1.
	[[ $rc == 1 ]] || { echo "the Inspector exited $rc, want 1 (a JSON-RPC error)"; details "$w"; return 1; }
	[[ ! -s $w.stdout ]] || { echo "the Inspector printed a result"; details "$w"; return 1; }
	js "$w.stderr" '
const m = (v.error || {}).message || "";
if (!m.startsWith("input_invalid:") || !m.includes("content")) return "the Inspector reported " + JSON.stringify(v) + ", want rook'"'"'s input_invalid message";
' || { details "$w"; return 1; }
	r=$(reply "$w" tools/call) || { echo "$r"; details "$w"; return 1; }
	printf '%s' "$r" >"$w.reply"
	js "$w.reply" '
if (v.result !== undefined) return "rook answered with a result: " + JSON.stringify(v);
if (!v.error || v.error.code !== -32004) return "rook answered " + JSON.stringify(v) + ", want error code -32004";
' || { details "$w"; return 1; }
	[[ $n0 == "$n1" ]] || { echo "the inbox went from $n0 to $n1 notes"; return 1; }
}

check_unknown_tool_inspector() {
	inspect unknown --method tools/call --tool-name no_such_tool --tool-args-json '{"content":"x"}'
	# The Inspector looks the tool up in tools/list and refuses it itself:
	# exit 5, tool_not_found, and no tools/call reaches the server.
	[[ $rc == 5 ]] || { echo "the Inspector exited $rc, want 5 (tool error)"; details "$w"; return 1; }
	js "$w.stderr" '
if ((v.error || {}).code !== "tool_not_found") return "the Inspector reported " + JSON.stringify(v) + ", want code tool_not_found";
' || { details "$w"; return 1; }
	if grep -q '"tools/call"' "$w.in" 2>/dev/null; then
		echo "a tools/call for the unknown tool reached rook"
		details "$w"
		return 1
	fi
}

# The server's own refusal, which the Inspector never lets it show: the
# same handshake the Inspector sends, then the call, as raw JSON lines.
check_unknown_tool_wire() {
	local out
	out=$(ROOK_HOME=$store timeout 30 "$node" -e '
const { spawn } = require("child_process");
const p = spawn(process.argv[1], ["mcp", "serve"], { stdio: ["pipe", "pipe", "inherit"] });
const send = (m) => p.stdin.write(JSON.stringify({ jsonrpc: "2.0", ...m }) + "\n");
let buf = "";
const timer = setTimeout(() => { console.log("no reply to tools/call within 10 s"); p.kill(); process.exit(1); }, 10000);
p.stdout.on("data", (d) => {
  buf += d;
  let i;
  while ((i = buf.indexOf("\n")) >= 0) {
    const m = JSON.parse(buf.slice(0, i)); buf = buf.slice(i + 1);
    if (m.id === 0) {
      send({ method: "notifications/initialized" });
      send({ id: 1, method: "tools/call", params: { name: "no_such_tool", arguments: { content: "x" } } });
    } else if (m.id === 1) {
      clearTimeout(timer); p.stdin.end();
      if (!m.error || m.error.code !== -32602) { console.log("rook answered " + JSON.stringify(m) + ", want error code -32602"); process.exitCode = 1; }
    }
  }
});
send({ id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw-check", version: "0" } } });
' "$rook" 2>&1) || { echo "${out:-the raw exchange failed}"; return 1; }
}

check "inspector tools/list shows append_to_inbox with its annotations (all four hints false)" check_tools_list
check "inspector tools/list --strict finds the tool's schema portable" check_tools_list_strict
check "inspector --protocol-era auto: server/discover refused, falls back to initialize, lists the tool" check_era_auto
check "inspector tools/call append_to_inbox with content and title saves (reply: Saved to Rook inbox DATE under \"TITLE\")" check_save
check "rook inbox show <the inspector's inbox> shows the note" check_show
check "inspector tools/call with empty content fails: rook answers -32004, inspector exits 1" check_empty_content
check "inspector refuses a call to an unknown tool (exit 5, tool_not_found, nothing sent)" check_unknown_tool_inspector
check "rook mcp serve answers a call to an unknown tool with -32602 (raw JSON-RPC)" check_unknown_tool_wire

summary
[[ $failed == 0 ]]
