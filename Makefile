# stoke — build, test, e2e, bench, demo, lint.
# The two commands a newcomer needs: `make demo` and `make test`.

GO      ?= go
BIN     := bin/stoke
PKGS    := ./...
FUZZTIME ?= 3s

.PHONY: all build test unit e2e sdk-deps sdk-test mcp-deps test-deps release-check fuzz bench demo lint clean

all: build

build:
	$(GO) build -o $(BIN) .

# Everything CI runs: vet, staticcheck, the release configuration check, the Claude Agent
# SDK suite, the race-enabled tests of every other package (e2e included), and short fuzz
# runs of the readers of untrusted input and of the permission rule matcher.
test: lint release-check sdk-test mcp-deps test-deps
	$(GO) test -race -count=1 -shuffle=on $$($(GO) list $(PKGS) | grep -v /e2e/sdk$$)
	$(MAKE) fuzz

# What the tests need from Debian: tmux, for the progress line in a real terminal
# (e2e TestProgressInTerminal). Installed when missing and we are root (CI); otherwise
# that one test skips and says why.
test-deps:
	@command -v tmux >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux >/dev/null; \
		else echo "tmux is missing and cannot be installed here: TestProgressInTerminal will skip"; fi; }

# goreleaser check on .goreleaser.yaml, run through `go tool` from its own modfile
# (.ci/goreleaser.mod) so that goreleaser's large dependency tree stays out of go.mod. The
# first run builds goreleaser (about 2 minutes on 2 cores); later runs use the cache.
release-check:
	$(GO) tool -modfile=.ci/goreleaser.mod goreleaser check

unit:
	$(GO) test -race -count=1 -shuffle=on $$($(GO) list ./... | grep -v /e2e)

e2e: mcp-deps
	$(GO) test -race -count=1 ./e2e/...

# The SDK suite (e2e/sdk): node's test runner drives the built stoke through the official
# @anthropic-ai/claude-agent-sdk and Qwen Code's @qwen-code/sdk, and the pinned typescript
# checks every message they yielded against their declarations; all installed from the npm
# registry into e2e/sdk/node_modules at the versions package-lock.json pins (again only
# when the lock changes). Needs node 20+ and npm; the optional native Claude Code binary
# is not downloaded.
SDK_DIR   := e2e/sdk
SDK_STAMP := $(SDK_DIR)/node_modules/.stoke-installed

$(SDK_STAMP): $(SDK_DIR)/package.json $(SDK_DIR)/package-lock.json
	cd $(SDK_DIR) && npm ci --omit=optional --no-audit --no-fund
	touch $@

sdk-deps: $(SDK_STAMP)

sdk-test: sdk-deps
	$(GO) test -race -count=1 ./$(SDK_DIR)/

# Real MCP servers for the e2e scripts mcp_*.txtar (@modelcontextprotocol/server-everything
# and server-filesystem), installed from the npm registry into e2e/mcp/node_modules at
# the versions package-lock.json pins (again only when the lock changes). Needs node 20+.
MCP_DIR   := e2e/mcp
MCP_STAMP := $(MCP_DIR)/node_modules/.stoke-installed

$(MCP_STAMP): $(MCP_DIR)/package.json $(MCP_DIR)/package-lock.json
	cd $(MCP_DIR) && npm ci --omit=optional --no-audit --no-fund
	touch $@

mcp-deps: $(MCP_STAMP)

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecoder$$' -fuzztime $(FUZZTIME) ./streamjson
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeTranscript$$' -fuzztime $(FUZZTIME) ./agents/store
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeSidecar$$' -fuzztime $(FUZZTIME) ./agents
	$(GO) test -run '^$$' -fuzz '^FuzzRules$$' -fuzztime $(FUZZTIME) ./agents/permission
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./agents/llm/cassette

# Benchmarks: in-process (continuation overhead, encoder) and whole-process (wall time and
# peak RSS of `stoke version`, a one-turn scripted run, the nonce scenario).
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 $$($(GO) list $(PKGS) | grep -v /e2e/sdk$$)

# The product's proof on the bundled scripted model: a background agent keeps a nonce, is
# continued with send_message on the same task id, and answers from the history it kept.
demo:
	@$(GO) build -o $(BIN) .
	@./$(BIN) -p "Keep NONCE-$$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n' | tr a-f A-F) safe with a background agent, then ask it for the nonce." \
		--scenario scenarios/nonce-memory.yaml --output-format stream-json --verbose

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) tool staticcheck $(PKGS)

clean:
	rm -rf bin
