# stoke — build, test, e2e, bench, demo, lint.
# The two commands a newcomer needs: `make demo` and `make test`.

GO      ?= go
BIN     := bin/stoke
# The Go release that builds and tests stoke: go.mod's toolchain line. With
# GOTOOLCHAIN=local (this project's machines set it, and many CI images) the go command
# ignores that line and uses whatever Go is installed, so the Makefile names the toolchain
# itself: the go command fetches it from the module proxy the first time (about 76 MB)
# and keeps it in the module cache. `make TOOLCHAIN=local ...` uses the installed Go.
TOOLCHAIN ?= $(shell sed -n 's/^toolchain //p' go.mod)
export GOTOOLCHAIN := $(TOOLCHAIN)
PKGS    := ./...
# The fuzz targets: every reader of untrusted bytes (stream-json input, transcripts and
# their lines, session archives, sidecars, agent files, cassettes, settings files, MCP
# configurations, .gitignore files) and the permission rules over shell lines, as
# NAME:PACKAGE:COUNT. Each runs for a count of inputs, not a duration: go1.26's fuzz
# coordinator can fail a duration run with a bare "context deadline exceeded" as the time
# runs out (golang/go#75804, fixed in go1.27); a count has no deadline to race, and a
# loaded machine only makes it slower. The counts differ because the targets' speeds do
# (from about 1,000 to 12,000 inputs a second on the 2-core VM): each reaches the point
# where new coverage comes only every few thousand inputs. The minimisation of each new
# input is bounded by a count too (FUZZMINIMIZE): the corpus a run finds is kept in the
# build cache for the next run, minimised or not.
FUZZ_TARGETS := \
	FuzzDecoder:./streamjson:50000 \
	FuzzDecodeTranscript:./agents/store:50000 \
	FuzzDecodeLine:./agents/store:100000 \
	FuzzImport:./agents/store:50000 \
	FuzzDecodeSidecar:./agents:50000 \
	FuzzParseDefinition:./agents/catalog:30000 \
	FuzzRules:./agents/permission:50000 \
	FuzzParse:./agents/llm/cassette:100000 \
	FuzzIgnore:./agents/tools:100000 \
	FuzzConfig:./agents/mcp:50000 \
	FuzzParse:./cmd/internal/settingsfile:30000
# FUZZ_SCALE multiplies every count: make fuzz-long runs FUZZ_LONG_SCALE times longer.
FUZZ_SCALE ?= 1
FUZZ_LONG_SCALE ?= 50
FUZZMINIMIZE ?= 100x

.PHONY: all build install install-check test unit e2e e2e-bin sdk-bin sdk-deps sdk-test acp-deps acp-test mcp-deps report-deps test-deps release-check release-schema vuln fuzz fuzz-long bench bench-all demo lint clean

all: build

build:
	$(GO) build -o $(BIN) .

# stoke into $(go env GOPATH)/bin, or $GOBIN: the README's first install step.
# -buildvcs=true overrides a GOFLAGS=-buildvcs=false, so that the binary carries the
# commit (`stoke version`: revision, and a version that names it).
install:
	$(GO) install -buildvcs=true .

# The README's first install step followed literally on a fresh clone of HEAD, with
# GOFLAGS=-buildvcs=false (e2e TestReadmeInstall): `stoke version` must name the commit.
# Not in make test: a build without -race or -cover, minutes of CPU on a cold cache.
install-check: e2e-bin
	E2E_INSTALL=1 E2E_STOKE_BINARY=$(E2E_BIN) $(GO) test -race -count=1 -run '^TestReadmeInstall$$' ./e2e

# Everything CI runs: vet, staticcheck, the Claude Agent SDK suite, the ACP suite, the
# race-enabled tests of every other package (e2e included, and with it the release
# configuration check, e2e TestReleaseConfig), and short fuzz runs of the readers of
# untrusted input and of the permission rule matcher. Test artifacts (the report
# screenshots of e2e/report) are kept under bin/test/artifacts.
test: lint sdk-test acp-test mcp-deps report-deps test-deps e2e-bin
	mkdir -p $(ARTIFACTS)
	E2E_STOKE_BINARY=$(E2E_BIN) $(GO) test -race -count=1 -shuffle=on -timeout $(TEST_TIMEOUT) -artifacts -outputdir $(ARTIFACTS) $$($(GO) list $(PKGS) | grep -v -e /e2e/sdk$$ -e /e2e/acp$$)
	$(MAKE) fuzz

# The stoke binaries the end-to-end suites run (e2e: -race -cover; e2e/sdk: -race), built
# here before go test starts rather than in the suites' TestMain: on a busy machine the
# build takes minutes, and inside a test binary it counts against go test's own kill
# timer. The suites check that the binary named in E2E_STOKE_BINARY / SDK_STOKE_BINARY
# was built as they need, and build their own when the variable is unset (go test ./e2e).
TESTBIN := $(CURDIR)/bin/test
ARTIFACTS := $(TESTBIN)/artifacts
E2E_BIN := $(TESTBIN)/stoke-e2e
SDK_BIN := $(TESTBIN)/stoke-sdk
# The bound on each test binary's run: generous, for a loaded 2-core machine (the go
# default is 10m); the builds above are outside it.
TEST_TIMEOUT ?= 20m

e2e-bin:
	$(GO) build -race -cover -buildvcs=auto -o $(E2E_BIN) .

sdk-bin:
	$(GO) build -race -buildvcs=auto -o $(SDK_BIN) .

# What the tests need from Debian: tmux, for the progress line in a real terminal
# (e2e TestProgressInTerminal), and chromium, the browser that opens the reports
# (e2e/report TestBrowser; about 45 s to install on a fresh machine). Installed when
# missing and we are root (CI); otherwise those tests skip and say why.
test-deps:
	@missing=""; \
	command -v tmux >/dev/null 2>&1 || missing="$$missing tmux"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
		else echo "missing and cannot be installed here:$$missing (TestProgressInTerminal needs tmux, e2e/report TestBrowser chromium: they will skip)"; fi; \
	fi

# goreleaser, run through `go tool` from its own modfile (.ci/goreleaser.mod) so that its
# large dependency tree stays out of go.mod. Its first run builds it from source: about
# 260 s of CPU (2 to 4 minutes on 2 cores), which CI does not pay. CI checks
# .goreleaser.yaml against the JSON schema this goreleaser generates (e2e
# TestReleaseConfig); release-check, for release time and for changes to
# .goreleaser.yaml, is the whole `goreleaser check` (defaults and deprecations too), then
# a snapshot release into dist/ (every archive built, nothing published, no SBOM: that
# needs syft) whose archives and checksums e2e TestReleaseSnapshot opens and checks.
# The six cross builds cost several more minutes of CPU (26 min of CPU, 80 min of wall
# time on a shared, loaded 2-core machine: hence --timeout, goreleaser's default being
# 1h). After updating goreleaser in .ci/goreleaser.mod, run release-schema:
# TestReleaseConfig wants the schema of the pinned version.
GORELEASER := $(GO) tool -modfile=.ci/goreleaser.mod goreleaser

release-check:
	$(GORELEASER) check
	$(GORELEASER) release --snapshot --clean --skip=publish,sbom --timeout=3h
	RELEASE_DIST=$(CURDIR)/dist $(GO) test -count=1 -run '^TestReleaseSnapshot$$' ./e2e

release-schema:
	rm -f .ci/goreleaser-*.schema.json
	$(GORELEASER) jsonschema -o .ci/goreleaser-$$($(GO) list -modfile=.ci/goreleaser.mod -m -f '{{.Version}}' github.com/goreleaser/goreleaser/v2).schema.json

# govulncheck on every package, with the standard library of the toolchain above: the
# tool, and the indexer that turns the golang.org/x/vulndb module into a database, come
# from their own modfile (.ci/vuln.mod). .ci/vuln picks the database: VULNDB (a URL or a
# directory) when set, else vuln.go.dev when it answers, else one built from the newest
# golang.org/x/vulndb the module proxy serves; when none is reachable it says so and
# fails. Not part of make test: it downloads the database (tens of MB) and takes minutes.
vuln:
	GO="$(GO)" .ci/vuln

unit:
	$(GO) test -race -count=1 -shuffle=on -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v /e2e)

e2e: mcp-deps acp-deps report-deps test-deps e2e-bin sdk-bin
	E2E_STOKE_BINARY=$(E2E_BIN) SDK_STOKE_BINARY=$(SDK_BIN) ACP_STOKE_BINARY=$(SDK_BIN) $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./e2e/...

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

sdk-test: sdk-deps sdk-bin
	SDK_STOKE_BINARY=$(SDK_BIN) $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./$(SDK_DIR)/

# The ACP suite (e2e/acp): node's test runner drives `stoke --acp` through the official
# Agent Client Protocol TypeScript client (@agentclientprotocol/sdk), and ajv checks every
# message stoke sends against the ACP JSON schema that package ships; both installed from
# the npm registry into e2e/acp/node_modules at the versions package-lock.json pins
# (again only when the lock changes). Needs node 20+. It runs the -race binary sdk-bin
# builds.
ACP_DIR   := e2e/acp
ACP_STAMP := $(ACP_DIR)/node_modules/.stoke-installed

$(ACP_STAMP): $(ACP_DIR)/package.json $(ACP_DIR)/package-lock.json
	cd $(ACP_DIR) && npm ci --omit=optional --no-audit --no-fund
	touch $@

acp-deps: $(ACP_STAMP)

acp-test: acp-deps sdk-bin
	ACP_STOKE_BINARY=$(SDK_BIN) $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./$(ACP_DIR)/

# Real MCP servers for the e2e scripts mcp_*.txtar (@modelcontextprotocol/server-everything
# and server-filesystem), installed from the npm registry into e2e/mcp/node_modules at
# the versions package-lock.json pins (again only when the lock changes). Needs node 20+.
MCP_DIR   := e2e/mcp
MCP_STAMP := $(MCP_DIR)/node_modules/.stoke-installed

$(MCP_STAMP): $(MCP_DIR)/package.json $(MCP_DIR)/package-lock.json
	cd $(MCP_DIR) && npm ci --omit=optional --no-audit --no-fund
	touch $@

mcp-deps: $(MCP_STAMP)

# The browser test of the reports (e2e/report): playwright-core, which drives Debian's
# chromium (make test-deps; playwright's own browser download is never used), and
# mermaid, whose browser bundle renders the Markdown report's gantt as GitHub would;
# installed from the npm registry into e2e/report/node_modules at the versions
# package-lock.json pins (again only when the lock changes; about 30 s, 170 MB). Needs
# node 20+.
REPORT_DIR   := e2e/report
REPORT_STAMP := $(REPORT_DIR)/node_modules/.stoke-installed

$(REPORT_STAMP): $(REPORT_DIR)/package.json $(REPORT_DIR)/package-lock.json
	cd $(REPORT_DIR) && npm ci --omit=optional --no-audit --no-fund
	touch $@

report-deps: $(REPORT_STAMP)

# make fuzz: each target of FUZZ_TARGETS for its count (about 4 min in all on the 2-core
# VM, the instrumented builds included). Inputs that fail are written to the package's
# testdata/fuzz/NAME/ and fail the target; commit them as regression seeds once fixed.
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		name=$${t%%:*}; rest=$${t#*:}; pkg=$${rest%%:*}; count=$${rest#*:}; \
		echo "fuzz $$name ($$pkg, $$((count * $(FUZZ_SCALE))) inputs)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $$((count * $(FUZZ_SCALE)))x -fuzzminimizetime $(FUZZMINIMIZE) $$pkg; \
	done

# make fuzz-long: the nightly size, FUZZ_LONG_SCALE (50) times make fuzz's counts: about
# 10-15 minutes a target, 2 to 3 hours in all on 2 cores. The corpus the fuzzer grows is
# kept in the Go build cache (go env GOCACHE, fuzz/), so nightly runs build on each other
# when the cache is kept between them.
fuzz-long:
	$(MAKE) fuzz FUZZ_SCALE=$(FUZZ_LONG_SCALE)

# Benchmarks. bench prints the figures of start-up, memory, the tool round and revival
# with their targets: the whole-process series (BenchmarkProcess: stoke next to a hello
# world and to the floor, the hello world that links the official provider SDKs at
# go.mod's versions, all built by the benchmark, interleaved over BENCH_ROUNDS rounds, as
# ratios to the floor), stoke's own time per tool round against a loopback server of each
# provider (BenchmarkToolRound), revival of a 10,000-message transcript
# (BenchmarkContinuation), an in-process --resume (BenchmarkResume), and grep and glob
# under a hostile .gitignore of 20,000 patterns (BenchmarkHostileGitignore fails when
# they cost more than twice 20 patterns). bench-all runs
# every benchmark of the module once.
BENCH_ROUNDS ?= 20

bench:
	$(GO) test -run '^$$' -bench '^BenchmarkProcess$$' -benchtime $(BENCH_ROUNDS)x ./e2e
	$(GO) test -run '^$$' -bench '^BenchmarkToolRound$$' -benchmem ./agents/runtime
	$(GO) test -run '^$$' -bench '^BenchmarkContinuation$$/^revived/messages=10000$$' -benchmem ./agents
	$(GO) test -run '^$$' -bench '^BenchmarkResume$$' -benchmem ./headless
	$(GO) test -run '^$$' -bench '^BenchmarkHostileGitignore$$' -benchmem ./agents/tools

bench-all:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 $$($(GO) list $(PKGS) | grep -v -e /e2e/sdk$$ -e /e2e/acp$$)

# The product's proof on the bundled scripted model: a background agent keeps a nonce, is
# continued with send_message on the same task id, and answers from the history it kept.
demo:
	@$(GO) build -o $(BIN) .
	@./$(BIN) -p "Keep NONCE-$$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n' | tr a-f A-F) safe with a background agent, then ask it for the nonce." \
		--scenario scenarios/nonce-memory.yaml --output-format stream-json --verbose

# vet and staticcheck read the race build of the packages, the one the tests compile, so
# that a fresh machine compiles the dependency tree once for both, not twice (about 220 s
# of CPU less in a cold make test; the only files the race build swaps are the raceEnabled
# constants of e2e and e2e/sdk). staticcheck itself is built without -race, from go.mod's
# tool line, and loads the packages with GOFLAGS=-race.
STATICCHECK := bin/staticcheck

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet -race $(PKGS)
	@# The release builds for macOS and Windows too: a system call only Linux has
	@# (syscall.Openat) broke them once and only make release-check saw it. The packages
	@# with files for some systems only are vetted for those two (cmd, which links every
	@# SDK, and the end-to-end tests, Linux and macOS only, are left to release-check).
	cross=$$($(GO) list -f '{{if .IgnoredGoFiles}}{{.ImportPath}}{{end}}' $(PKGS) | grep -v -e '/cmd$$' -e '/e2e'); \
		GOOS=darwin $(GO) vet $$cross && GOOS=windows $(GO) vet $$cross
	$(GO) build -o $(STATICCHECK) honnef.co/go/tools/cmd/staticcheck
	GOFLAGS="$$GOFLAGS -race" $(STATICCHECK) $(PKGS)

clean:
	rm -rf bin
