#!/usr/bin/env bash
# Real-client checks, both ways round:
#  * issue 8: the MCP Inspector CLI, pinned in tools/mcp (make mcp-tools
#    installs it), lists the tool of `rook mcp serve` and saves a note
#    through the built rook binary, and is refused what must be refused;
#  * issue 9: rook's MCP client (`rook mcp add|ls|tools|call|set|sync`)
#    against the pinned reference servers: server-everything over stdio and
#    over streamable HTTP on 127.0.0.1, server-memory over stdio.
#
#   scripts/mcp-clients.sh [ROOK_BINARY]     (make mcp-clients)
#
# Without ROOK_BINARY it builds rook into a temp dir. The store (ROOK_HOME),
# the Inspector's HOME (~/.mcp-inspector), the wire logs, the outputs of the
# rook commands and server-memory's file are in a throw-away temp dir too
# (MCP_CLIENTS_KEEP=1 keeps it). Prints `ok   NAME` or `FAIL NAME: WHY` per
# check, a subtotal per issue, then `mcp clients: N passed, N failed`;
# exits non-zero when any check failed.
#
# The Inspector's stdio child gets only HOME, LOGNAME, PATH, SHELL, TERM and
# USER of our environment: everything else (ROOK_HOME, TZ) goes by -e. The
# server runs behind a tee wrapper that records the traffic, which is how
# the checks read what the Inspector does not print (the JSON-RPC error
# code of a refused call).
#
# The HTTP server-everything is started here, on a free port, with a
# minimal environment (its get-env tool prints it) and bound to 127.0.0.1
# (it listens on all interfaces by itself: a preloaded module pins the
# host); it is stopped by its pid when its checks are done, or on exit.
set -euo pipefail
given=${1-}
[[ -z $given || $given == /* ]] || given=$PWD/$given
cd "$(dirname "$0")/.."
root=$PWD
tools=$root/tools/mcp
node=$tools/node_modules/.bin/node
inspector=$tools/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js
everything=$tools/node_modules/@modelcontextprotocol/server-everything/dist/index.js
memory=$tools/node_modules/@modelcontextprotocol/server-memory/dist/index.js

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

[[ -x $node && -f $inspector && -f $everything && -f $memory ]] ||
	setup_fail "the MCP tools are not installed in tools/mcp: run \`make mcp-tools\` (needs npm)"

work=$(mktemp -d "${TMPDIR:-/tmp}/rook-mcp-clients.XXXXXX")
http_pid=
cleanup() {
	if [[ -n $http_pid ]]; then
		kill "$http_pid" 2>/dev/null || true
		wait "$http_pid" 2>/dev/null || true
	fi
	[[ ${MCP_CLIENTS_KEEP:-} == 1 ]] || rm -rf "$work"
}
trap cleanup EXIT
[[ ${MCP_CLIENTS_KEEP:-} == 1 ]] && echo "keeping the temp dir $work"
mkdir -p "$work/bin" "$work/home" "$work/wire" "$work/rook"
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

version() { "$node" -p 'require(process.argv[1]).version' "$tools/node_modules/@modelcontextprotocol/$1/package.json"; }
echo "using MCP Inspector $(version inspector), server-everything $(version server-everything), server-memory $(version server-memory) on node $("$node" --version); rook at $rook"

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


# subtotal WHAT: the checks since the last subtotal, and how long they took.
sub_passed=0
sub_failed=0
sub_start=$SECONDS
subtotal() {
	echo "$1: $((passed - sub_passed)) passed, $((failed - sub_failed)) failed ($((SECONDS - sub_start)) s)"
	sub_passed=$passed sub_failed=$failed sub_start=$SECONDS
}

check "inspector tools/list shows append_to_inbox with its annotations (all four hints false)" check_tools_list
check "inspector tools/list --strict finds the tool's schema portable" check_tools_list_strict
check "inspector --protocol-era auto: server/discover refused, falls back to initialize, lists the tool" check_era_auto
check "inspector tools/call append_to_inbox with content and title saves (reply: Saved to Rook inbox DATE under \"TITLE\")" check_save
check "rook inbox show <the inspector's inbox> shows the note" check_show
check "inspector tools/call with empty content fails: rook answers -32004, inspector exits 1" check_empty_content
check "inspector refuses a call to an unknown tool (exit 5, tool_not_found, nothing sent)" check_unknown_tool_inspector
check "rook mcp serve answers a call to an unknown tool with -32602 (raw JSON-RPC)" check_unknown_tool_wire
subtotal "issue 8, rook mcp serve"

# --- issue 9: rook's MCP client against the reference servers ------------
#
# The checks run in subshells and depend on what the earlier ones left in
# the store; each reads what it needs of an earlier command from its output
# files ($work/rook/NAME.out), not from variables.

# rk NAME ARGS...: runs the built rook with ARGS (ROOK_HOME=$store, stdin
# /dev/null, at most 60 s); leaves $o (the output prefix), $o.out, $o.err
# and the exit code in $rc.
rk() {
	o=$work/rook/$1
	shift
	printf '%q ' "$@" >"$o.cmd"
	rc=0
	ROOK_HOME=$store timeout 60 "$rook" "$@" >"$o.out" 2>"$o.err" </dev/null || rc=$?
}

# said O: what a failed check shows of the rook command O.
said() {
	echo "command: rook $(cat "$1.cmd")"
	if [[ $rc == 124 ]]; then echo "exit code 124: timed out after 60 s"; else echo "exit code $rc"; fi
	echo "stdout: $(head -c 2500 "$1.out")"
	echo "stderr: $(head -c 1500 "$1.err")"
}

# has O TEXT...: O's stdout holds every TEXT (literally); else says which not.
has() {
	local f=$1.out t
	shift
	for t in "$@"; do
		grep -qF -- "$t" "$f" || { echo "the output lacks: $t"; return 1; }
	done
}

# block TOOL O: the paragraph of `rook mcp tools` output O about TOOL (its
# first line is the name, then maybe " — TITLE" or a note; then indented
# lines).
block() { awk -v t="$1" '/^[^ ]/ && $1 == t { on = 1 } on && /^$/ { exit } on' "$2.out"; }

# newon O: the tools `rook mcp add|sync` output O names as new and on, one
# a line ("new, switched on: A, B", or, past 10, "A, ..., J and 3 more");
# newmore O: that "and N more"'s N, or nothing.
newon() { sed -n 's/^new, switched on: //p' "$1.out" | sed -E 's/ and [0-9]+ more$//' | tr -d ' ' | tr , '\n'; }
newmore() { sed -nE 's/^new, switched on: .* and ([0-9]+) more$/\1/p' "$1.out"; }

# ntools O: the number of tools `rook mcp add` output O reports.
ntools() { sed -nE '1s/.*: ([0-9]+) tool\(s\), [0-9]+ on$/\1/p' "$1.out"; }

# jsonarg KEY VALUE: {"KEY": "VALUE"} as JSON.
jsonarg() { "$node" -p 'JSON.stringify({[process.argv[1]]: process.argv[2]})' "$1" "$2"; }

token=$$-$RANDOM
echo_msg="hi from rook $token (é ✓)"
http_msg="over HTTP $token"

# What `rook mcp add` must print: the server and its tool count, all on up
# to the default limit of 16, past it the note about the ones left off.
added_ok() { # O NAME TRANSPORT SERVERINFO-PREFIX TOOL...
	local o=$1 name=$2 transport=$3 server=$4 first n on want
	shift 4
	[[ $rc == 0 ]] || { echo "rook mcp add exited $rc"; said "$o"; return 1; }
	first=$(head -n 1 "$o.out")
	[[ $first =~ ^added\ $name\ \($transport,\ $server\ [^\)]*\):\ ([0-9]+)\ tool\(s\),\ ([0-9]+)\ on$ ]] ||
		{ echo "the first line is not \"added $name ($transport, $server VERSION): N tool(s), N on\""; said "$o"; return 1; }
	n=${BASH_REMATCH[1]} on=${BASH_REMATCH[2]}
	if ((n > 16)); then
		want="left off $((n - 16)) tool(s), past the limit of 16 on at once: "
		[[ $on == 16 ]] || { echo "$n tools and $on on, want 16 on (the default limit)"; said "$o"; return 1; }
		grep -qF -- "$want" "$o.out" || { echo "$n tools but no \"$want...\" line"; said "$o"; return 1; }
	else
		[[ $on == "$n" ]] || { echo "$n tools and $on on, want all on"; said "$o"; return 1; }
		! grep -q '^left off' "$o.out" || { echo "a left-off note with $n tools, under the limit"; said "$o"; return 1; }
	fi
	local new more added=$o
	new=$(newon "$o") more=$(newmore "$o")
	# The line names at most 10 tools, then how many more.
	if ((on > 10)); then
		[[ $(grep -c . <<<"$new") == 10 && $more == $((on - 10)) ]] ||
			{ echo "the \"new, switched on: ...\" line does not name 10 of the $on tools and then \"and $((on - 10)) more\""; said "$o"; return 1; }
	else
		[[ $(grep -c . <<<"$new") == "$on" && -z $more ]] || { echo "the \"new, switched on: ...\" line does not list $on tools"; said "$o"; return 1; }
	fi
	has "$o" "rook mcp tools $name" || { said "$o"; return 1; }
	# Each tool named: among those the line names, or, past its 10, on in
	# `rook --json mcp tools` (which lists every one).
	rk "$(basename "$added")-tools-json" --json mcp tools "$name"
	[[ $rc == 0 ]] || { echo "rook --json mcp tools $name exited $rc"; said "$o"; return 1; }
	for t in "$@"; do
		grep -qxF -- "$t" <<<"$new" && continue
		((on > 10)) || { echo "$t is not among the new tools switched on"; said "$added"; return 1; }
		js "$o.out" 'const t = (v.tools || []).find((t) => t.name === a[0]); if (!t) return a[0] + " is not among the tools"; if (!t.on) return a[0] + " is off";' "$t" ||
			{ echo "$t is not among the new tools switched on"; said "$o"; return 1; }
	done
}

# ls_ok NAME TRANSPORT N STATUS: `rook mcp ls` shows NAME's row.
ls_ok() {
	local name=$1 transport=$2 n=$3 status=$4 row
	rk "ls-$name-$status" mcp ls
	[[ $rc == 0 ]] || { echo "rook mcp ls exited $rc"; said "$o"; return 1; }
	head -n 1 "$o.out" | grep -qE '^name +transport +status +tools on +last sync +last error' ||
		{ echo "no header line"; said "$o"; return 1; }
	row=$(grep -E "^$name " "$o.out") || { echo "no row for $name"; said "$o"; return 1; }
	[[ $row =~ ^$name\ +$transport\ +$status\ +$n/$n\ +[0-9]{4}-[0-9]{2}-[0-9]{2}\ [0-9]{2}:[0-9]{2}( |$) ]] ||
		{ echo "the row for $name is \"$row\", want $transport, $status, $n/$n tools on, a last sync time"; said "$o"; return 1; }
}

# echo_tool_ok O NAME N: `rook mcp tools NAME` output O shows echo with its
# argument, settings, claims and the server's description.
echo_tool_ok() {
	local o=$1 name=$2 n=$3 b
	[[ $rc == 0 ]] || { echo "rook mcp tools exited $rc"; said "$o"; return 1; }
	has "$o" "$name: $n tool(s), $n on (at most 16)" || { said "$o"; return 1; }
	b=$(block echo "$o")
	[[ -n $b ]] || { echo "no paragraph for echo"; said "$o"; return 1; }
	for want in "  settings: on, read-only, runs without asking" \
		"  the server claims: read-only: true, destructive: false" \
		"  arguments: message*:string  (* required)" \
		"  description (written by the server):" \
		"    Echoes back the input string"; do
		[[ $'\n'$b$'\n' == *$'\n'"$want"* ]] || { echo "echo's paragraph lacks \"$want\""; echo "$b"; return 1; }
	done
}

# -- server-everything over stdio

check_ev_add() {
	rk ev-add mcp add everything --command "$node" --arg "$everything" --arg stdio
	added_ok "$o" everything stdio mcp-servers/everything echo get-sum get-tiny-image get-structured-content
}

check_ev_ls() {
	local n
	n=$(ntools "$work/rook/ev-add")
	ls_ok everything stdio "${n:-?}" ok || return 1
	rk ev-ls-json --json mcp ls
	[[ $rc == 0 ]] || { echo "rook --json mcp ls exited $rc"; said "$o"; return 1; }
	js "$o.out" '
const s = v.find((s) => s.name === "everything");
if (!s) return "no server everything in " + JSON.stringify(v.map((s) => s.name));
if (s.status !== "ok") return `status ${JSON.stringify(s.status)}, want "ok"`;
if (!/^mcp-servers\/everything /.test(s.server || "")) return "server " + JSON.stringify(s.server);
if (!s.protocol) return "no protocol";
if (!s.last_sync) return "no last_sync";
if (s.last_error) return "last_error " + JSON.stringify(s.last_error);
if (!Array.isArray(s.tools) || String(s.tools.length) !== a[0]) return `${(s.tools || []).length} tools, want ${a[0]}`;
if (!s.tools.every((t) => t.on)) return "tools off: " + s.tools.filter((t) => !t.on).map((t) => t.name);
' "$n" || { said "$o"; return 1; }
}

check_ev_tools() {
	rk ev-tools mcp tools everything
	echo_tool_ok "$o" everything "$(ntools "$work/rook/ev-add")"
}

check_ev_echo() {
	rk ev-echo mcp call everything echo "$(jsonarg message "$echo_msg")"
	[[ $rc == 0 ]] || { echo "rook mcp call exited $rc"; said "$o"; return 1; }
	[[ $(cat "$o.out") == "Echo: $echo_msg" ]] || { echo "the output is not \"Echo: $echo_msg\""; said "$o"; return 1; }
}

check_ev_image() {
	local bytes want
	bytes=$("$node" -e '
import(require("url").pathToFileURL(process.argv[1]).href).then(
  (m) => console.log(Buffer.from(m.MCP_TINY_IMAGE, "base64").length),
  (e) => { console.log(e.message); process.exit(1); });' "$(dirname "$everything")/tools/get-tiny-image.js") ||
		{ echo "could not read the tiny image from server-everything: $bytes"; return 1; }
	want="[image image/png, $bytes bytes]"
	rk ev-image mcp call everything get-tiny-image
	[[ $rc == 0 ]] || { echo "rook mcp call exited $rc"; said "$o"; return 1; }
	grep -qxF -- "$want" "$o.out" || { echo "no line \"$want\""; said "$o"; return 1; }
	has "$o" "Here's the image you requested:" || { said "$o"; return 1; }
	! grep -q iVBORw0KGgo "$o.out" || { echo "the image's data is printed"; said "$o"; return 1; }
}

check_ev_structured() {
	rk ev-structured mcp call everything get-structured-content '{"location":"Chicago"}'
	[[ $rc == 0 ]] || { echo "rook mcp call exited $rc"; said "$o"; return 1; }
	has "$o" "structured content:" '"temperature": ' '"conditions": ' || { said "$o"; return 1; }
}

# Approval: set on get-sum; with nobody at a terminal the call is refused
# (and does not run), with --yes it runs.
check_ev_approval() {
	rk ev-set mcp set everything get-sum --approval
	[[ $rc == 0 ]] || { echo "rook mcp set exited $rc"; said "$o"; return 1; }
	has "$o" "everything get-sum: on, read-only, asks for approval" || { said "$o"; return 1; }
	rk ev-sum-refused mcp call everything get-sum '{"a":2,"b":3}'
	[[ $rc != 0 ]] || { echo "the call ran without approval"; said "$o"; return 1; }
	grep -qF -- "--yes" "$o.err" || { echo "the refusal does not mention --yes"; said "$o"; return 1; }
	! grep -q "The sum" "$o.out" || { echo "the tool ran"; said "$o"; return 1; }
	rk ev-sum-yes mcp call everything get-sum '{"a":2,"b":3}' --yes
	[[ $rc == 0 ]] || { echo "rook mcp call --yes exited $rc"; said "$o"; return 1; }
	[[ $(cat "$o.out") == "The sum of 2 and 3 is 5." ]] || { echo "the output is not \"The sum of 2 and 3 is 5.\""; said "$o"; return 1; }
}

check_ev_sync() {
	local n
	n=$(ntools "$work/rook/ev-add")
	rk ev-sync mcp sync everything
	[[ $rc == 0 ]] || { echo "rook mcp sync exited $rc"; said "$o"; return 1; }
	[[ $(head -n 1 "$o.out") =~ ^synced\ everything\ \(stdio,\ mcp-servers/everything\ [^\)]*\):\ $n\ tool\(s\),\ $n\ on$ ]] ||
		{ echo "the first line is not \"synced everything (stdio, mcp-servers/everything VERSION): $n tool(s), $n on\""; said "$o"; return 1; }
	! grep -qE '^(new|missing|back)' "$o.out" || { echo "the same list reads as changed"; said "$o"; return 1; }
	rk ev-tools-json --json mcp tools everything
	[[ $rc == 0 ]] || { echo "rook --json mcp tools exited $rc"; said "$o"; return 1; }
	js "$o.out" '
const t = (v.tools || []).find((t) => t.name === "get-sum");
if (!t) return "no get-sum";
if (!t.approval) return "get-sum lost its approval setting: " + JSON.stringify(t);
if (!t.on) return "get-sum is off";
' || { said "$o"; return 1; }
}

# Past the limit: the same server again, at most 5 tools on.
check_ev_limit() {
	local n line left
	rk few-add mcp add everything-few --command "$node" --arg "$everything" --arg stdio --max-tools 5
	[[ $rc == 0 ]] || { echo "rook mcp add exited $rc"; said "$o"; return 1; }
	n=$(ntools "$o")
	[[ -n $n && $n -gt 5 ]] || { echo "cannot read a tool count above 5"; said "$o"; return 1; }
	[[ $(head -n 1 "$o.out") == *": $n tool(s), 5 on" ]] || { echo "the first line does not say $n tool(s), 5 on"; said "$o"; return 1; }
	line=$(grep "^left off " "$o.out") || { echo "no \"left off ...\" line"; said "$o"; return 1; }
	[[ $line =~ ^left\ off\ $((n - 5))\ tool\(s\),\ past\ the\ limit\ of\ 5\ on\ at\ once:\ ([a-z, -]+)\ \(\`rook\ mcp\ set\ everything-few\ TOOL\ --on\`\ after\ turning\ others\ off\)$ ]] ||
		{ echo "the note is \"$line\", want \"left off $((n - 5)) tool(s), past the limit of 5 on at once: NAMES (\`rook mcp set everything-few TOOL --on\` after turning others off)\""; return 1; }
	left=${BASH_REMATCH[1]}
	[[ $(tr -cd , <<<"$left" | wc -c) == $((n - 6)) ]] || { echo "the note names not $((n - 5)) tools: $left"; return 1; }
	[[ $(newon "$o" | grep -c .) == 5 ]] || { echo "the \"new, switched on: ...\" line does not list 5 tools"; said "$o"; return 1; }
	! newon "$o" | grep -qxF -f <(tr -d ' ' <<<"$left" | tr , '\n') || { echo "a tool is both switched on and left off"; said "$o"; return 1; }
	rk few-ls --json mcp ls
	js "$o.out" '
const s = v.find((s) => s.name === "everything-few");
if (!s) return "no everything-few in rook mcp ls";
const off = s.tools.filter((t) => !t.on).map((t) => t.name).sort().join(", ");
const want = a[0].split(", ").sort().join(", ");
if (off !== want) return `off: ${off}; the note said: ${want}`;
' "$left" || { said "$o"; return 1; }
	rk few-call-off mcp call everything-few "${left%%,*}" --yes
	[[ $rc != 0 ]] || { echo "a call to ${left%%,*}, left off, ran"; said "$o"; return 1; }
}

check_ev_session() {
	local id
	rk sess-ls --json session ls --all
	[[ $rc == 0 ]] || { echo "rook --json session ls --all exited $rc"; said "$o"; return 1; }
	id=$(js "$o.out" '
const s = v.filter((s) => s.title === "MCP server everything");
if (s.length !== 1) return `${s.length} sessions titled "MCP server everything": ` + JSON.stringify(v.map((s) => s.title));
if (!(s[0].tags || []).includes("mcp:everything")) return "its tags: " + JSON.stringify(s[0].tags);
console.log(s[0].id);
') || { echo "$id"; said "$o"; return 1; }
	rk sess-show session show "$id"
	[[ $rc == 0 ]] || { echo "rook session show exited $rc"; said "$o"; return 1; }
	has "$o" "tool-call echo" "tool-result echo" "Echo: $echo_msg" "tool-call get-tiny-image" "tool-result get-tiny-image" || { said "$o"; return 1; }
	rk sess-show-json --json session show "$id"
	[[ $rc == 0 ]] || { echo "rook --json session show exited $rc"; said "$o"; return 1; }
	js "$o.out" '
const ev = v.events; // a page: {session, events, total, next_from, ...}
if (!Array.isArray(ev)) return "no events in: " + JSON.stringify(v).slice(0, 200);
const i = ev.findIndex((e) => e.kind === "tool-call" && e.label === "echo");
if (i < 0) return "no tool-call event for echo: " + JSON.stringify(ev.map((e) => `${e.kind} ${e.label}`));
const call = JSON.parse(ev[i].body);
if (call.server !== "everything" || call.tool !== "echo" || (call.arguments || {}).message !== a[0]) return "the call event: " + ev[i].body;
const r = ev[i + 1];
if (!r || r.kind !== "tool-result" || r.label !== "echo") return "the event after the call: " + JSON.stringify(r);
if (!r.body.includes(JSON.stringify("Echo: " + a[0]))) return "the result event: " + r.body;
' "$echo_msg" || { echo "in session $id"; return 1; }
}

# -- server-everything over streamable HTTP on 127.0.0.1

# It binds every interface itself; this preload pins a bare port to
# 127.0.0.1.
cat >"$work/loopback.mjs" <<'JS'
import net from "node:net";
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const p = args[0];
  if ((typeof p === "number" || (typeof p === "string" && /^\d+$/.test(p))) && typeof args[1] !== "string") args.splice(1, 0, "127.0.0.1");
  return listen.apply(this, args);
};
JS

# start_http: starts it on a free port (three tries), waits up to 20 s for
# it to listen; sets http_pid and http_url, or http_why.
http_url=
http_why=
start_http() {
	local try port i
	for try in 1 2 3; do
		port=$("$node" -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });')
		env -i PATH=/usr/bin:/bin HOME="$work/home" PORT="$port" \
			"$node" --import "$work/loopback.mjs" "$everything" streamableHttp >"$work/http.log" 2>&1 </dev/null &
		http_pid=$!
		for ((i = 0; i < 200; i++)); do
			if ! kill -0 "$http_pid" 2>/dev/null; then
				wait "$http_pid" 2>/dev/null || true
				http_pid=
				http_why="the server exited: $(head -c 500 "$work/http.log")"
				continue 2
			fi
			if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
				http_url=http://127.0.0.1:$port/mcp
				return 0
			fi
			sleep 0.1
		done
		http_why="the server did not listen on 127.0.0.1:$port within 20 s: $(head -c 500 "$work/http.log")"
		return 1
	done
	return 1
}

stop_http() {
	[[ -n $http_pid ]] || return 0
	kill "$http_pid" 2>/dev/null || true
	wait "$http_pid" 2>/dev/null || true
	http_pid=
}

check_http_start() {
	[[ -n $http_url ]] || { echo "${http_why:-not started}"; return 1; }
	grep -q "listening on port" "$work/http.log" || { echo "no \"listening\" line in its log"; cat "$work/http.log"; return 1; }
}

check_http_add() {
	[[ -n $http_url ]] || { echo "no server"; return 1; }
	rk http-add mcp add everything-http --url "$http_url"
	added_ok "$o" everything-http http mcp-servers/everything echo get-sum
}

check_http_ls() {
	ls_ok everything-http http "$(ntools "$work/rook/http-add")" ok
}

check_http_tools() {
	rk http-tools mcp tools everything-http
	echo_tool_ok "$o" everything-http "$(ntools "$work/rook/http-add")"
}

check_http_echo() {
	rk http-echo mcp call everything-http echo "$(jsonarg message "$http_msg")"
	[[ $rc == 0 ]] || { echo "rook mcp call exited $rc"; said "$o"; return 1; }
	[[ $(cat "$o.out") == "Echo: $http_msg" ]] || { echo "the output is not \"Echo: $http_msg\""; said "$o"; return 1; }
	grep -q "Received MCP POST request" "$work/http.log" || { echo "the server's log shows no request"; return 1; }
}

# The server stopped: a call says it could not be reached, ls says
# unreachable, and the setup (its tools) is kept.
check_http_gone() {
	[[ -n $http_url ]] || { echo "no server"; return 1; }
	rk http-gone mcp call everything-http echo '{"message":"anyone?"}'
	[[ $rc != 0 ]] || { echo "the call to a stopped server succeeded"; said "$o"; return 1; }
	grep -qF "could not be reached" "$o.err" || { echo "the error does not say the server could not be reached"; said "$o"; return 1; }
	ls_ok everything-http http "$(ntools "$work/rook/http-add")" unreachable
}

# -- server-memory over stdio

entity=rook-check-$token
observation="seen by rook $token"

check_mem_add() {
	rk mem-add mcp add memory --command "$node" --arg "$memory" --env "MEMORY_FILE_PATH=$work/memory.jsonl"
	added_ok "$o" memory stdio memory-server create_entities read_graph delete_entities search_nodes
}

check_mem_ls() {
	ls_ok memory stdio "$(ntools "$work/rook/mem-add")" ok
}

check_mem_tools() {
	local b n
	n=$(ntools "$work/rook/mem-add")
	rk mem-tools mcp tools memory
	[[ $rc == 0 ]] || { echo "rook mcp tools exited $rc"; said "$o"; return 1; }
	has "$o" "memory: $n tool(s), $n on (at most 16)" || { said "$o"; return 1; }
	b=$(block create_entities "$o")
	for want in "  settings: on, may change things, runs without asking" \
		"  the server claims: read-only: false, destructive: false" \
		"  arguments: entities*:array  (* required)" \
		"    Create multiple new entities in the knowledge graph"; do
		[[ $'\n'$b$'\n' == *$'\n'"$want"* ]] || { echo "create_entities' paragraph lacks \"$want\""; echo "$b"; return 1; }
	done
	b=$(block read_graph "$o")
	[[ $b == *$'\n'"  settings: on, read-only, runs without asking"* ]] || { echo "read_graph is not on and read-only"; echo "$b"; return 1; }
	b=$(block delete_entities "$o")
	[[ $b == *"destructive: true"* ]] || { echo "delete_entities' claims lack destructive: true"; echo "$b"; return 1; }
}

check_mem_create() {
	rk mem-create mcp call memory create_entities --yes \
		"$("$node" -p 'JSON.stringify({entities: [{name: process.argv[1], entityType: "note", observations: [process.argv[2]]}]})' "$entity" "$observation")"
	[[ $rc == 0 ]] || { echo "rook mcp call exited $rc"; said "$o"; return 1; }
	has "$o" "\"name\": \"$entity\"" "\"$observation\"" || { said "$o"; return 1; }
	grep -qF "\"name\":\"$entity\"" "$work/memory.jsonl" 2>/dev/null || { echo "server-memory's file lacks the entity: $(head -c 500 "$work/memory.jsonl" 2>&1)"; return 1; }
}

check_mem_read() {
	rk mem-read mcp call memory read_graph
	[[ $rc == 0 ]] || { echo "rook mcp call exited $rc"; said "$o"; return 1; }
	has "$o" "\"name\": \"$entity\"" "\"entityType\": \"note\"" "\"$observation\"" '"relations": []' || { said "$o"; return 1; }
}

everything_stdio() {
	check "rook mcp add everything --command node --arg dist/index.js --arg stdio: connects, lists its tools, all on" check_ev_add
	check "rook mcp ls: everything, stdio, ok, tools on/total, last sync (and --json)" check_ev_ls
	check "rook mcp tools everything: echo with its settings, claims, arguments and description" check_ev_tools
	check "rook mcp call everything echo prints the echo" check_ev_echo
	check "rook mcp call everything get-tiny-image describes the image (type, bytes), not its data" check_ev_image
	check "rook mcp call everything get-structured-content prints the structured content" check_ev_structured
	check "approval: refused with nobody to ask, runs with --yes" check_ev_approval
	check "rook mcp sync everything: same tools, no changes, settings kept" check_ev_sync
	check "past the limit (--max-tools 5): says how many it left off and which, and they are off" check_ev_limit
	check "rook session ls --all / session show: \"MCP server everything\" holds the echo call and its result" check_ev_session
}
everything_stdio
subtotal "issue 9, server-everything over stdio"

start_http || true
check "server-everything streamableHttp listens on 127.0.0.1 (a free port)" check_http_start
check "rook mcp add everything-http --url http://127.0.0.1:PORT/mcp: connects, lists its tools, all on" check_http_add
check "rook mcp ls: everything-http, http, ok, tools on/total" check_http_ls
check "rook mcp tools everything-http: echo with its arguments" check_http_tools
check "rook mcp call everything-http echo prints the echo" check_http_echo
stop_http
check "server stopped: the call says it could not be reached, ls says unreachable, setup kept" check_http_gone
subtotal "issue 9, server-everything over streamable HTTP"

check "rook mcp add memory --command node --arg dist/index.js --env MEMORY_FILE_PATH=...: lists its tools, all on" check_mem_add
check "rook mcp ls: memory, stdio, ok, tools on/total" check_mem_ls
check "rook mcp tools memory: create_entities may change things, read_graph read-only, delete_entities destructive" check_mem_tools
check "rook mcp call memory create_entities creates the entity (printed, and in the server's file)" check_mem_create
check "rook mcp call memory read_graph shows the entity and its observation" check_mem_read
subtotal "issue 9, server-memory over stdio"

summary
[[ $failed == 0 ]]
