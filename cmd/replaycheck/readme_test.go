//go:build unix

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/rogpeppe/go-internal/txtar"
)

// readmeBlock is one ```sh block of a documentation file (docFiles).
type readmeBlock struct {
	file     string // the file, relative to the repository root: README.md, docs/tutorials/ci.md
	line     int    // the file's line of the opening fence
	commands []readmeCommand
}

// readmeCommand is one command of a block, as a reader pastes it into a
// shell: one line, or several joined by a trailing backslash or an open quote.
type readmeCommand struct {
	line int    // the file's line of its first line
	text string // its lines as written, comments included
	code string // its lines without comments and trailing blanks
	key  string // code with each run of blanks as one space: what readmeNotes is keyed by
}

// shFence opens a ```sh block; its indentation is stripped from the lines of
// the block (a block in a list item).
var shFence = regexp.MustCompile("^([ \t]*)```sh[ \t]*$")

// readmeShellBlocks returns the ```sh blocks of a Markdown file and the
// commands in each. Blank and comment-only lines between commands are not
// commands.
func readmeShellBlocks(name, src string) ([]readmeBlock, error) {
	lines := strings.Split(src, "\n")
	var blocks []readmeBlock
	for i := 0; i < len(lines); i++ {
		m := shFence.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		b := readmeBlock{file: name, line: i + 1}
		var text, code []string
		var quote byte
		start := 0
		for i++; ; i++ {
			if i == len(lines) {
				return nil, fmt.Errorf("%s:%d: the sh block has no closing fence", name, b.line)
			}
			l := strings.TrimPrefix(lines[i], m[1])
			if strings.TrimSpace(l) == "```" {
				if text != nil {
					return nil, fmt.Errorf("%s:%d: the command does not end before its block does (an open quote or a trailing backslash)", name, start)
				}
				break
			}
			c, open, more := shellLine(l, quote)
			if text == nil {
				if strings.TrimSpace(c) == "" {
					continue
				}
				start = i + 1
			}
			text, code, quote = append(text, l), append(code, c), open
			if more {
				continue
			}
			joined := strings.TrimSpace(strings.Join(code, "\n"))
			b.commands = append(b.commands, readmeCommand{
				line: start,
				text: strings.Join(text, "\n"),
				code: joined,
				key:  strings.Join(strings.Fields(joined), " "),
			})
			text, code = nil, nil
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// shellLine scans one line of a shell command that starts inside quote (0,
// '\” or '"'). It returns the line without its comment and the quote still
// open at its end; more is true when the command goes on to the next line
// (an open quote or a trailing backslash).
func shellLine(line string, quote byte) (code string, open byte, more bool) {
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			}
		case c == '\\':
			if i == len(line)-1 {
				return line, quote, true
			}
			i++
		case quote == '"':
			if c == '"' {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return strings.TrimRight(line[:i], " \t"), 0, false
		}
	}
	return strings.TrimRight(line, " \t"), quote, quote != 0
}

// readmeNote says how TestREADMECommands runs a documented command that
// does not simply exit 0 once run as written: the exit code the page claims,
// what it needs, or why it is not run.
type readmeNote struct {
	exit   int      // the exit code the README claims
	output []string // extended regular expressions its output (stdout and stderr) matches
	// ready holds URLs that answer (any HTTP status) once a command that
	// serves is ready: one ending in & runs until the end of its shell, one
	// that runs until Ctrl-C (stop) is stopped with SIGTERM at once.
	ready []string
	stop  bool
	needs []string // what it needs beyond what readmeTools finds in it: keys of readmeNeeds
	// before is shell run first, in the same shell, for what the README
	// assumes (it must exit 0). A server it starts in the background adds
	// its pid to readme_bg, which the shell kills as it exits.
	before string
	skip   string // why the test does not run it
	// instead, with skip, is shell run in its place (it must exit 0), so
	// that the commands after it can run.
	instead string
	// continues, on a block's first command: the block runs in the shell of
	// the block above it, whose servers still run.
	continues bool
	// netns, on any command of a shell's blocks: that shell runs in a network
	// namespace of its own (unshare -rn), for fixed ports.
	netns bool
}

// The fixed addresses of serve and gateway, for readiness.
const (
	readmeUpstreamReady = "http://127.0.0.1:8765/_replaycheck/health"
	readmeLedgerReady   = "http://127.0.0.1:8766/mcp"
	readmeGatewayReady  = "http://127.0.0.1:4000/"
)

// readmeNotes annotates documented commands by file (as docFiles names it)
// and key. A command without a note runs as written and must exit 0; a note
// whose key its file does not show fails the test. An expensive command is
// shown on one page only.
var readmeNotes = map[string]map[string]readmeNote{
	"README.md": {
		"make test": {skip: "runs every test of the tree, this one included"},
		"go install github.com/replaycheck/replaycheck/cmd/replaycheck@latest": {
			skip: "downloads and compiles the latest release from the module proxy; the test runs this tree's build",
		},
		"replaycheck run --tag seed --target builtin:naive": {
			exit: 1, output: []string{`^10 scenarios on builtin:naive: 6 pass, 4 fail`, `│ seed chat fault_on +│ builtin:naive │ fail +│ 500 +│ 3 `, `REPLAY #2 \(first ran at `},
		},
		"replaycheck run --tag seed --target builtin:naive --html report.html": {exit: 1},
		"replaycheck run --tag seed --target builtin:guarded": {
			output: []string{`^10 scenarios on builtin:guarded: 10 pass, 0 fail, 0 unknown`},
		},
		// The five steps share one shell: bin/agent from step 1, the
		// target file of step 2 (its YAML block, written here).
		"replaycheck validate --target my-agent.yaml": {
			continues: true,
			before:    `printf '%s\n' 'kind: client' 'name: my-agent' 'command: [bin/agent]' 'timeout: 90s' > my-agent.yaml`,
			output:    []string{`^ok: target my-agent \(my-agent.yaml\)$`},
		},
		// The ten client scenarios pass; the Gemini ones are skipped:
		// the agent calls chat only.
		"replaycheck run --target my-agent.yaml": {
			continues: true,
			output: []string{`│ client follow-up 500 always +│ my-agent │ pass +│ exit 1 +│ 1 `, `│ client no fault +│ my-agent │ pass `,
				`: 10 pass, 0 fail, 0 unknown, 2 skipped \(not applicable\)`},
		},
		"REPLAYCHECK_AGENT=$PWD/bin/agent replaycheck run scenarios/clients --target targets/agent-naive.yaml --html report.html": {
			continues: true, exit: 1,
			output: []string{`│ client follow-up 500 always +│ agent-naive │ fail +│ exit 1 +│ 3 `, `REPLAY #2 `, `REPLAY #3 `},
		},
	},
	"CONTRIBUTING.md": {
		"make test":  {skip: "runs every test of the tree, this one included"},
		"make bench": {skip: "runs every benchmark of the tree, for minutes"},
		"go install github.com/goreleaser/goreleaser/v2@v2.15.1": {
			skip: "downloads and compiles goreleaser, for several minutes; TestGoreleaserConfig checks the release file",
		},
		"goreleaser build --snapshot --clean": {skip: "builds the six release binaries, for minutes"},
	},
	"docs/reference/cli.md": {
		"replaycheck run --target builtin:naive -v":                 {exit: 1},
		"replaycheck run --target builtin:stream-splice":            {exit: 1},
		"replaycheck run --target builtin:naive --html report.html": {exit: 1},
	},
	"docs/tutorials/by-hand.md": {
		"replaycheck serve --ledger ledger.txt --upstream-log upstream.log --flags-dir . &": {
			netns: true, ready: []string{readmeUpstreamReady, readmeLedgerReady},
		},
		"replaycheck gateway --mode naive --master-key sk-local &": {ready: []string{readmeGatewayReady}},
		"wc -l < ledger.txt":          {output: []string{`^ *3$`}},
		"sort upstream.log | uniq -c": {output: []string{`^ *3 .* initial `, `^ *3 .* follow_up injected_500$`}},
		// The control API, while the serve of the block above runs.
		"C=http://127.0.0.1:8765/_replaycheck J='Content-Type: application/json'": {continues: true},
		`curl -s $C/faults -H "$J" -d '{"upstream": [{"on": "initial", "respond": {"status": 429}, "times": "once"}]}'`: {
			output: []string{`"id": "upstream-1"`, `"status": 429`},
		},
		`curl -s $C/faults -H "$J" -d '{"upstream": [{"on": "follow_up", "respond": {"status": 503}}]}'`: {
			output: []string{`"id": "upstream-2"`},
		},
		`curl -s $C/faults -H "$J" -d '{"run": "rc1zn8c3ywjk", "mcp": [{"tool": "commit_write", "drop_after_execute": {}}]}'`: {
			output: []string{`"id": "mcp-1"`, `"run": "rc1zn8c3ywjk"`},
		},
		"curl -s $C/faults":                      {output: []string{`"id": "upstream-1"`, `"id": "upstream-2"`, `"id": "mcp-1"`, `"matched": `, `"runs": `}},
		"curl -s $C/faults/upstream-2":           {output: []string{`"id": "upstream-2"`, `"status": 503`}},
		"curl -s -X DELETE $C/faults/upstream-2": {output: []string{`"id": "upstream-2"`}},
		`curl -s -X PUT $C/faults -H "$J" -d '{"upstream": [{"on": "follow_up", "respond": {"status": 500}}]}'`: {
			output: []string{`"id": "upstream-3"`, `"status": 500`},
		},
		"curl -s $C/counts":                   {output: []string{`"total": \{`, `"write_errors": `, `"unfired_faults": `, `"mcp_sessions": `}},
		`curl -s "$C/timeline?run="`:          {output: []string{`"events": `}},
		"curl -s -X DELETE $C/faults":         {output: []string{`"cleared": true`, `"removed": \[`, `"upstream-3"`, `"mcp-1"`}},
		"curl -s $C/openapi.yaml | head -n 1": {output: []string{`^openapi: 3\.1\.0$`}},
		// A control key, and serve listening beyond loopback (in a network
		// namespace of its own: fixed ports).
		"replaycheck serve --upstream-addr 0.0.0.0:8765": {exit: 2, netns: true, output: []string{`not a loopback address`, `--control-key`}},
		"replaycheck serve --upstream-addr 0.0.0.0:8765 --mcp-addr 0.0.0.0:8766 &": {
			ready: []string{readmeUpstreamReady, readmeLedgerReady},
		},
		"curl -s http://127.0.0.1:8765/_replaycheck/health":                                  {output: []string{`"status": "ok"`}},
		`curl -s -o /dev/null -w '%{http_code}\n' http://127.0.0.1:8765/_replaycheck/counts`: {output: []string{`^401$`}},
		`curl -s -H "Authorization: Bearer $REPLAYCHECK_CONTROL_KEY" http://127.0.0.1:8765/_replaycheck/faults`: {
			output: []string{`"faults": \[\]`},
		},
		`curl -s -X POST -H "$J" $C/reset`: {output: []string{`"reset": true`}},
		"replaycheck serve --relay https://api.openai.com --record cassettes/": {
			netns: true, ready: []string{readmeUpstreamReady}, stop: true,
		},
		// Replays what the block above recorded (no exchange: nothing reaches
		// a provider from the test).
		"replaycheck serve --cassette cassettes/ --upstream-fault '{on: initial, drop: {after: tool_call}}'": {
			continues: true, ready: []string{readmeUpstreamReady}, stop: true,
		},
	},
	"docs/tutorials/ci.md": {
		`replaycheck report merge run-1.json run-2.json run-3.json --junit junit.xml --json run.json --markdown "$GITHUB_STEP_SUMMARY" --html report.html`: {
			before: `for i in 1 2 3; do replaycheck run -q --shard $i/3 --json run-$i.json || exit; done; GITHUB_STEP_SUMMARY=summary.md`,
		},
	},
	"docs/tutorials/container.md": {
		"make image":                  {skip: "builds the container image with podman; TestContainerImage builds the same Dockerfile and runs it"},
		"CONTAINER=docker make image": {skip: "builds the container image with docker; TestContainerImage builds the same Dockerfile with podman"},
		"docker run -d --name replaycheck -p 127.0.0.1:8765:8765 -p 127.0.0.1:8766:8766 -e REPLAYCHECK_CONTROL_KEY=ci-key localhost/replaycheck:dev": {
			skip: "runs the image make image built; TestContainerImage runs it with podman, its ports published on loopback and a control key",
		},
		"podman --runtime runc run -d --name replaycheck --ulimit nofile=4096:4096 -p 127.0.0.1:8765:8765 -p 127.0.0.1:8766:8766 -e REPLAYCHECK_CONTROL_KEY=ci-key localhost/replaycheck:dev": {
			skip: "runs the image make image built; TestContainerImage runs it with podman and these flags (newPodman says why each is there)",
		},
		"curl -s http://127.0.0.1:8765/_replaycheck/health": {
			skip: "needs the container above; TestContainerImage reaches its control API from the host",
		},
		"curl -s -H 'Authorization: Bearer ci-key' http://127.0.0.1:8765/_replaycheck/counts": {
			skip: "needs the container above; TestContainerImage arms a fault from the host and sees it fire in /counts",
		},
	},
	"docs/tutorials/explore.md": {
		"replaycheck explore --target builtin:naive --out found/": {
			exit: 1, output: []string{`^[0-9]+ findings, one per cause, from [0-9]+ failing cells; rules broken: no-replay-after-dispatch, `, `written to found/no-replay-after-dispatch-`},
		},
		// Runs the findings the command above wrote: every one passes on the fixed gateway.
		"replaycheck run found/ --target builtin:guarded": {
			output: []string{` scenarios on builtin:guarded: ([0-9]+) pass, 0 fail, 0 unknown`},
		},
		"make clients build": {
			skip: "installs the agent clients from the npm registry and builds bin/replaycheck; the test uses " +
				"targets/clients/node_modules when it is installed and links its replaycheck as bin/replaycheck",
			instead: `mkdir -p bin && ln -s "$(command -v replaycheck)" bin/replaycheck`,
		},
		"unshare -rn sh -c 'ip link set lo up && ./bin/replaycheck explore --target targets/ai-sdk.yaml --out found/'": {
			skip: "too slow for the tests: a sweep of 141 cells, each a run of the client (3 minutes on 2 cores)",
		},
	},
	"docs/reference/matrix.md": {
		"replaycheck matrix builtin:guarded builtin:naive --kinds 500,drop,mcp-drop --json matrix.json --markdown matrix.md --html matrix.html": {
			output: []string{`^2 agents × 3 mechanisms: 3 DUPLICATE, 0 LOST, 0 reported as failure, 0 hung, 0 unknown, 3 safe in `},
		},
		// The same agents again: the same cells.
		"replaycheck matrix builtin:guarded builtin:naive --kinds 500,drop,mcp-drop --diff matrix.json": {
			continues: true,
			output:    []string{`^matrix diff against matrix.json: no cell changed$`},
		},
		// The parts joined above, compared with the matrix they were joined into.
		"replaycheck report merge part-1.json part-2.json --diff matrix.json": {
			continues: true,
			output:    []string{`^matrix diff against matrix.json: no cell changed$`},
		},
		`make matrix MATRIX_AGENTS="builtin:guarded builtin:naive targets/openai-agents.yaml targets/codex.yaml"`: {
			skip: "sweeps two real agents inside unshare -rn for many minutes; TestMatrixDocUpToDate rebuilds a mechanism of each family on the built-in gateways",
		},
	},
	"docs/tutorials/go-library.md": {
		"go get github.com/replaycheck/replaycheck@latest": {skip: "adds the module to your own module; the test runs in this one"},
		"go test -run Example ./replaychecktest": {
			skip: "compiles the package's tests (openai-go, the MCP SDK) for most of a minute; go test ./replaychecktest runs the same examples",
		},
		"go doc github.com/replaycheck/replaycheck/replaychecktest Verdict": {
			output: []string{`^type Verdict = rules\.Verdict$`, `Status says pass, fail or unknown`},
		},
	},
	"docs/tutorials/mcp-protocols.md": {
		// The naive twin writes twice after each lost answer.
		"REPLAYCHECK_AGENT=$PWD/bin/agent replaycheck run scenarios/clients --tag mcp2026 --target targets/agent.yaml --target targets/agent-naive.yaml": {
			exit: 1, output: []string{`^10 scenarios on agent, agent-naive: 7 pass, 3 fail, 0 unknown`},
		},
		"unshare -rn sh -c 'ip link set lo up && replaycheck run scenarios/clients --tag mcp2026 --target targets/claude-code.yaml'": {
			skip: "runs Claude Code, for minutes; TestRealClients (./targets) runs these scenarios on this target in a loopback namespace " +
				"and pins each one's verdict: the lost keyed calls and the hang on the cut stream",
		},
	},
	"docs/tutorials/stdio.md": {
		// The switch re-sends the calls of the stdio deaths after execute.
		"replaycheck run --tag stdio --target builtin:guarded --target builtin:mcp-replay-after-stdio-death": {exit: 1},
	},
	"docs/tutorials/writing-scenarios.md": {
		"replaycheck run scenarios/seed/fault-on-chat.yaml --target builtin:naive --repeat 20": {
			exit: 1, output: []string{`^1 scenario \(20 runs\) on builtin:naive: 0 pass, 1 fail`, `expected no run of 20 to fail, observed 20 of 20 runs failed`},
		},
	},
	"docs/tutorials/your-agent.md": {
		"REPLAYCHECK_AGENT=$PWD/bin/agent replaycheck run scenarios/clients \\ --target targets/agent.yaml --target targets/agent-naive.yaml": {
			exit: 1, output: []string{`^20 scenarios on agent, agent-naive: 15 pass, 5 fail, 0 unknown`},
		},
		// Uses the bin/agent the block above built.
		"unshare -rn sh -c 'ip link set lo up && REPLAYCHECK_AGENT=$PWD/bin/agent replaycheck run scenarios/clients --target targets/agent.yaml'": {
			continues: true,
		},
		"make clients build": {
			skip: "installs the agent clients from the npm registry and builds bin/replaycheck; the test uses " +
				"targets/clients/node_modules when it is installed and links its replaycheck as bin/replaycheck",
			instead: `mkdir -p bin && ln -s "$(command -v replaycheck)" bin/replaycheck`,
		},
		"unshare -rn sh -c 'ip link set lo up && ./bin/replaycheck run scenarios/clients --target targets/claude-code.yaml -vv --filter always'": {
			needs: []string{"clients"},
		},
	},
	"docs/tutorials/your-mcp-server.md": {
		// The reader's own MCP server: server-everything over Streamable HTTP
		// at 3001 (its pid in readme_bg, which the shell's EXIT trap kills),
		// then server-memory as build/index.js, each with a script calling its
		// tools. serve is stopped once ready, ending the node it spawned.
		`replaycheck serve --mcp-relay http://127.0.0.1:3001/mcp --script script.yaml --mcp-fault '{drop_after_execute: {}}'`: {
			netns: true, needs: []string{"clients"}, ready: []string{readmeUpstreamReady, readmeLedgerReady}, stop: true,
			before: `PORT=3001 node targets/clients/node_modules/@modelcontextprotocol/server-everything/dist/index.js streamableHttp > .readme/everything.out 2>&1 &
readme_bg="$readme_bg $!"
printf '%s\n' '- call: echo' '  arguments: {message: "{{entry}}"}' '- say: done' > script.yaml
readme_ready server-everything .readme/everything.out http://127.0.0.1:3001/mcp`,
		},
		`replaycheck serve --mcp-command "node build/index.js" --mcp-env MEMORY_FILE_PATH --script script.yaml`: {
			ready: []string{readmeUpstreamReady, readmeLedgerReady}, stop: true, needs: []string{"clients"},
			before: `mkdir -p build && ln -sf "$PWD/targets/clients/node_modules/@modelcontextprotocol/server-memory/dist/index.js" build/index.js &&
cp examples/mcp-cassette/script.yaml script.yaml && export MEMORY_FILE_PATH="$PWD/.readme/memory.jsonl"`,
		},
		"MEMORY_DIR=$(mktemp -d) replaycheck run targets/testdata/forward-memory.yaml --target builtin:naive --target builtin:guarded": {
			exit: 1, needs: []string{"clients"},
			output: []string{`no-replay-after-dispatch: expected at most 1 execution for 1 logical tool call, observed 3 executions \(create_entities ×3\)`},
		},
		// The seed suite and explore forwarded to real MCP servers from target
		// files (TestForwardSeedSuite pins the per-run counts).
		"MEMORY_DIR=$(mktemp -d) REPLAYCHECK_GATEWAY_MODE=naive replaycheck run scenarios/seed --target targets/gateway-memory.yaml --parallel 8": {
			exit: 1, needs: []string{"clients"},
			output: []string{`observed 3 executions \(create_entities ×3\)`, `10 scenarios on gateway-memory-naive: 6 pass, 4 fail`},
		},
		"MEMORY_DIR=$(mktemp -d) REPLAYCHECK_GATEWAY_MODE=guarded replaycheck run scenarios/seed --target targets/gateway-memory.yaml --parallel 8": {
			needs: []string{"clients"}, output: []string{`10 scenarios on gateway-memory-guarded: 10 pass, 0 fail`},
		},
		// Ends at SIGTERM once the block has run (node's exit by the signal).
		"PORT=3001 node targets/clients/node_modules/@modelcontextprotocol/server-everything/dist/index.js streamableHttp &": {
			exit: 143, netns: true, needs: []string{"clients"}, ready: []string{"http://127.0.0.1:3001/mcp"},
		},
		"REPLAYCHECK_GATEWAY_MODE=naive replaycheck run scenarios/seed --target targets/gateway-everything.yaml --parallel 8": {
			exit: 1, needs: []string{"clients"},
			output: []string{`observed 3 executions \(echo ×3\)`, `10 scenarios on gateway-everything-naive: 6 pass, 4 fail`},
		},
		"unshare -rn sh -c 'ip link set lo up && MEMORY_DIR=$(mktemp -d) replaycheck run scenarios/clients --target targets/claude-code-memory.yaml --timeout 150s'": {
			skip: "runs Claude Code through the forwarder to server-memory, for minutes; TestClaudeCodeForwardMemory (./targets) runs this " +
				"command in a loopback namespace and pins each scenario's verdict, exit and writes (8 pass, 2 unknown)",
		},
		"MEMORY_DIR=$(mktemp -d) REPLAYCHECK_GATEWAY_MODE=naive replaycheck explore --target targets/gateway-memory.yaml --kinds mcp-drop --parallel 4": {
			exit: 1, needs: []string{"clients"},
			output: []string{`mcp-drop at tools/call create_entities #1 \(once\)`, `create_entities .* ran twice for 1 logical tool call`, `1 finding \(1 confirmed, 0 flaky\)`},
		},
		// Records server-memory's initialize and tools (nothing calls a tool
		// here); TestServeMCPRecordReplay records calls with these flags.
		`replaycheck serve --mcp-command "node targets/clients/node_modules/@modelcontextprotocol/server-memory/dist/index.js" \ --script examples/mcp-cassette/script.yaml --record cassettes/`: {
			netns: true, ready: []string{readmeUpstreamReady, readmeLedgerReady}, stop: true, needs: []string{"clients"},
		},
		"replaycheck run examples/mcp-cassette/replay.yaml --target builtin:naive --target builtin:guarded": {
			exit:   1,
			output: []string{`no-replay-after-dispatch: expected at most 1 execution for 1 logical tool call, observed 3 executions \(create_entities ×3\)`},
		},
		`replaycheck serve --mcp-cassette examples/mcp-cassette/ --script examples/mcp-cassette/script.yaml --mcp-fault '{drop_after_execute: {}}'`: {
			netns: true, ready: []string{readmeUpstreamReady, readmeLedgerReady}, stop: true,
		},
	},
	"docs/tutorials/your-proxy.md": {
		"REPLAYCHECK_GATEWAY_MODE=naive replaycheck run scenarios/seed --target targets/gateway-process.yaml": {
			exit: 1, output: []string{`^10 scenarios on gateway-process-naive: 6 pass, 4 fail`},
		},
		"REPLAYCHECK_GATEWAY_BUG=checkpoint-at-turn-end replaycheck run --tag resume --target targets/gateway-process-resume.yaml": {
			exit: 1, output: []string{`^5 scenarios on gateway-process-resume-checkpoint-at-turn-end: 1 pass, 4 fail`, `replayed by the resumed run`},
		},
		"LITELLM_MASTER_KEY=sk-local-test replaycheck run scenarios/seed --target targets/litellm.yaml --timeout 120s": {
			skip: "needs LiteLLM (pip install 'litellm[proxy]'), which the tests do not install; " +
				"TestLiteLLMTargetWiring (./targets) runs this command with a stand-in litellm",
		},
	},
}

// readmeTools are the programs a README command may need besides
// replaycheck and a POSIX shell; a command that names one needs it.
var readmeTools = []string{"curl", "jq", "unshare", "goreleaser"}

// readmeNeeds says, for each need, why it is not met here ("" when it is).
func readmeNeeds(root string) map[string]string {
	needs := make(map[string]string)
	for _, tool := range readmeTools {
		if _, err := exec.LookPath(tool); err != nil {
			needs[tool] = tool + " is not installed"
		}
	}
	if needs["jq"] != "" {
		needs["jq"] += " (make test installs it)"
	}
	if needs["unshare"] == "" {
		if out, err := exec.Command("unshare", "-rn", "sh", "-c", "ip link set lo up").CombinedOutput(); err != nil {
			needs["unshare"] = fmt.Sprintf("unshare -rn does not work here: %v %s", err, bytes.TrimSpace(out))
		}
	}
	if _, err := os.Stat(filepath.Join(root, "targets/clients/node_modules")); err != nil {
		needs["clients"] = "the agent clients are not installed (make clients)"
	}
	return needs
}

// readmeShell is a shell in which the test runs one or more blocks of one
// file as a reader would, in the file's order.
type readmeShell struct {
	name   string // FILE:LINE of its first block
	file   string
	blocks []readmeBlock
	netns  bool
}

// readmeShells groups the blocks into shells (a block that continues the one
// above it in the same file runs in its shell).
func readmeShells(blocks []readmeBlock) []readmeShell {
	var shells []readmeShell
	for _, b := range blocks {
		notes := readmeNotes[b.file]
		if n := len(shells); n > 0 && shells[n-1].file == b.file && len(b.commands) > 0 && notes[b.commands[0].key].continues {
			shells[n-1].blocks = append(shells[n-1].blocks, b)
		} else {
			shells = append(shells, readmeShell{name: fmt.Sprintf("%s:%d", b.file, b.line), file: b.file, blocks: []readmeBlock{b}})
		}
		for _, c := range b.commands {
			shells[len(shells)-1].netns = shells[len(shells)-1].netns || notes[c.key].netns
		}
	}
	return shells
}

// readmePrelude starts each shell's script: its output and each command's
// go to stdout in order, and the functions the script calls.
const readmePrelude = `exec 2>&1
mkdir -p .readme
readme_failed=0
readme_bg=
# readme_check LABEL OUTPUT WANT GOT [PATTERN...]: the command LABEL, whose
# output is in the file OUTPUT, exited GOT; WANT is what the README claims,
# and each extended regular expression PATTERN matches a line of its output.
readme_check() {
	readme_label=$1 readme_out=$2 readme_want=$3 readme_got=$4
	shift 4
	if [ "$readme_got" -ne "$readme_want" ]; then
		readme_fail "exit $readme_got, want $readme_want"
		return
	fi
	for readme_pattern; do
		if ! grep -Eq -- "$readme_pattern" "$readme_out"; then
			readme_fail "exit $readme_got as documented, but no line of its output matches $readme_pattern"
			return
		fi
	done
	echo "ok   $readme_label: exit $readme_got"
}
readme_fail() {
	echo "FAIL $readme_label: $1; its output:"
	sed 's/^/    | /' "$readme_out"
	readme_failed=1
}
# readme_ready LABEL OUTPUT URL...: the command LABEL, whose output is in
# OUTPUT, answers at every URL within a minute (any HTTP status).
readme_ready() {
	readme_label=$1 readme_out=$2
	shift 2
	for readme_url; do
		if ! curl -s -o /dev/null --retry 60 --retry-connrefused --retry-max-time 60 "$readme_url"; then
			readme_fail "not ready at $readme_url within a minute"
			return 1
		fi
	done
}
# readme_stop LABEL OUTPUT WANT PID: stop the command LABEL (PID) as Ctrl-C
# would and check its exit.
readme_stop() {
	kill -TERM "$4" 2>/dev/null
	wait "$4"
	readme_check "$1" "$2" "$3" $?
}
`

// readmeScript returns the shell script of sh: each README command as written,
// followed by the check of its exit code (and output); commands that serve
// are started in the background and stopped at the end. skipped says which
// commands do not run and why.
func readmeScript(sh readmeShell, unmet map[string]string) (script string, ran int, skipped []string) {
	var b, stops strings.Builder
	var pids []string
	for _, blk := range sh.blocks {
		for _, c := range blk.commands {
			n := readmeNotes[sh.file][c.key]
			label := fmt.Sprintf("%s:%d (%s)", sh.file, c.line, c.key)
			out := fmt.Sprintf(".readme/%d.out", c.line)
			why := n.skip
			for _, need := range append(readmeToolsIn(c.code, n), n.needs...) {
				if why == "" && unmet[need] != "" {
					why = "needs " + need + ": " + unmet[need]
				}
			}
			if why != "" {
				skipped = append(skipped, fmt.Sprintf("%s:%d %s: not run: %s", sh.file, c.line, c.key, why))
				fmt.Fprintf(&b, "\necho %s\n", shellQuote("skip "+label+": "+why))
				if n.instead != "" {
					fmt.Fprintf(&b, "{ %s\n} > %s 2>&1\nreadme_check %s %s 0 $?\n", n.instead, out,
						shellQuote(label+", in its place: "+n.instead), out)
				}
				continue
			}
			ran++
			if n.before != "" {
				fmt.Fprintf(&b, "\n{ %s\n} > %s.before 2>&1\nreadme_check %s %s.before 0 $?\n", n.before, out,
					shellQuote(label+", its set-up: "+n.before), out)
			}
			fmt.Fprintf(&b, "\n# %s\n", strings.ReplaceAll(label, "\n", " "))
			background := strings.HasSuffix(c.code, "&") && !strings.HasSuffix(c.code, "&&")
			if !background && !n.stop {
				fmt.Fprintf(&b, "{ %s\n} > %s 2>&1\nreadme_check %s %s %d $?", c.text, out, shellQuote(label), out, n.exit)
				for _, p := range n.output {
					fmt.Fprintf(&b, " %s", shellQuote(p))
				}
				b.WriteString("\n")
				continue
			}
			pid := fmt.Sprintf("$readme_pid_%d", c.line)
			pids = append(pids, pid)
			fmt.Fprintf(&b, "%s > %s 2>&1 &\nreadme_pid_%d=$!\nreadme_ready %s %s %s\n",
				strings.TrimSpace(strings.TrimSuffix(c.code, "&")), out, c.line, shellQuote(label), out, strings.Join(n.ready, " "))
			stop := fmt.Sprintf("readme_stop %s %s %d %s\n", shellQuote(label), out, n.exit, pid)
			if n.stop {
				b.WriteString(stop)
			} else {
				stops.WriteString(stop)
			}
		}
	}
	b.WriteString("\n" + stops.String() + "exit $readme_failed\n")
	trap := ""
	if len(pids) > 0 {
		trap = fmt.Sprintf("trap 'kill %s $readme_bg 2>/dev/null' EXIT\n", strings.Join(pids, " "))
	}
	return readmePrelude + trap + b.String(), ran, skipped
}

// readmeToolsIn returns the readmeTools that command code names, and curl
// when the test waits for it to be ready.
func readmeToolsIn(code string, n readmeNote) []string {
	var tools []string
	for _, tool := range readmeTools {
		if regexp.MustCompile(`(^|[\s|;&(])`+tool+`(\s|$)`).MatchString(code) || tool == "curl" && len(n.ready) > 0 {
			tools = append(tools, tool)
		}
	}
	return tools
}

// shellQuote quotes s as one word for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// docBlocks returns the sh blocks of every docFiles file, file by file.
func docBlocks(t *testing.T, root string) []readmeBlock {
	t.Helper()
	files, err := docFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []readmeBlock
	for _, f := range files {
		src, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := readmeShellBlocks(f, string(src))
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, b...)
	}
	return blocks
}

// TestREADMECommands runs every command of the sh blocks of README.md,
// CONTRIBUTING.md and docs/ (docFiles), found when the test runs, as a
// reader would paste them: each block in one shell (a block whose first
// command continues the block above it in the same file runs in that
// shell), in a copy of the repository's files, with replaycheck on PATH
// (releaseBinary). Each command must exit as its page says (0, or the exit
// of its readmeNotes entry, keyed by file and command) and match the output
// the note claims. Servers (a command ending in &, or serve run until
// Ctrl-C) run in the background until they answer and are then stopped
// with SIGTERM; blocks on fixed ports run in a network namespace of their
// own. A command that cannot run here (a missing tool, an uninstalled
// client) or is not run at all (its note says why) is skipped with the
// reason. Commands run as written: a broken documented command fails here.
func TestREADMECommands(t *testing.T) {
	const root = "../.."
	blocks := docBlocks(t, root)
	shown := make(map[string]map[string]bool)
	for _, b := range blocks {
		if shown[b.file] == nil {
			shown[b.file] = make(map[string]bool)
		}
		for _, c := range b.commands {
			shown[b.file][c.key] = true
		}
	}
	for file, notes := range readmeNotes {
		for key := range notes {
			if !shown[file][key] {
				t.Errorf("readmeNotes has a note for %q in %s, which %s does not show", key, file, file)
			}
		}
	}
	// The files of the work tree that git does not ignore: a file not yet
	// added is part of what the commands build.
	files, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("the README's commands run in a copy of the repository's files, which git ls-files lists: %v", err)
	}
	tracked := strings.Split(strings.TrimSuffix(string(files), "\x00"), "\x00")
	unmet := readmeNeeds(root)
	goEnv, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY", "GOSUMDB", "GOFLAGS", "GOTOOLCHAIN").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	bin := releaseBinary(t)
	dir := t.TempDir()
	var scripts []string
	for _, sh := range readmeShells(blocks) {
		script, ran, skipped := readmeScript(sh, unmet)
		run := "exec sh .readme/run.sh"
		if sh.netns {
			run = "exec unshare -rn sh -c 'ip link set lo up && exec sh .readme/run.sh'"
		}
		switch {
		case sh.netns && unmet["unshare"] != "" && ran > 0:
			run = "skip " + testscriptQuote(sh.name+": its servers listen on fixed ports, so it runs in a network namespace of its own: "+unmet["unshare"])
		case ran == 0:
			run = "skip " + testscriptQuote(strings.Join(skipped, "; "))
		}
		comment := fmt.Sprintf("# %s: its sh blocks in one shell\n%s\n", sh.name, run)
		a := &txtar.Archive{Comment: []byte(comment), Files: []txtar.File{{Name: ".readme/run.sh", Data: []byte(script)}}}
		data := txtar.Format(a)
		if back := txtar.Parse(data); len(back.Files) != 1 || !bytes.Equal(back.Files[0].Data, a.Files[0].Data) {
			t.Fatalf("%s: a command holds a txtar file marker line", sh.name)
		}
		file := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(sh.name)+".txtar")
		if err := os.WriteFile(file, data, 0o666); err != nil {
			t.Fatal(err)
		}
		scripts = append(scripts, file)
	}
	testscript.Run(t, testscript.Params{
		Files:               scripts,
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			if err := copyRepository(root, tracked, env.WorkDir); err != nil {
				return err
			}
			env.Setenv("PATH", filepath.Dir(bin)+string(filepath.ListSeparator)+env.Getenv("PATH"))
			home := filepath.Join(env.WorkDir, ".readme/home")
			env.Setenv("HOME", home)
			for i, name := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY", "GOSUMDB", "GOFLAGS", "GOTOOLCHAIN"} {
				env.Setenv(name, strings.Split(string(goEnv), "\n")[i])
			}
			return os.MkdirAll(home, 0o777)
		},
	})
}

// testscriptQuote quotes s as one testscript argument.
func testscriptQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// copyRepository copies the files (paths relative to root) into dir, and
// the link to the installed agent clients.
func copyRepository(root string, files []string, dir string) error {
	for _, f := range files {
		st, err := os.Stat(filepath.Join(root, f))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the work tree
		}
		if err != nil {
			return err
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o777); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, st.Mode().Perm()); err != nil {
			return err
		}
	}
	clients, err := filepath.EvalSymlinks(filepath.Join(root, "targets/clients/node_modules"))
	if err != nil {
		return nil // not installed: the commands that need them are skipped
	}
	clients, err = filepath.Abs(clients)
	if err != nil {
		return err
	}
	return os.Symlink(clients, filepath.Join(dir, "targets/clients/node_modules"))
}

// TestReadmeShellBlocks checks how README blocks split into commands: a
// comment (an apostrophe in it opens no quote) or blank line is none, a
// trailing backslash or an open quote joins the next line, a # in quotes is
// no comment, and an indented block (in a list item) is dedented.
func TestReadmeShellBlocks(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []readmeBlock
		err  string
	}{
		{
			name: "comments and blank lines",
			src:  "text\n```sh\n# a comment\n\nreplaycheck run     # one run's\nreplaycheck rules\n```\n```yaml\nnot: sh\n```\n",
			want: []readmeBlock{{file: "README.md", line: 2, commands: []readmeCommand{
				{line: 5, text: "replaycheck run     # one run's", code: "replaycheck run", key: "replaycheck run"},
				{line: 6, text: "replaycheck rules", code: "replaycheck rules", key: "replaycheck rules"},
			}}},
		},
		{
			name: "continuations",
			src:  "```sh\nA=1 replaycheck run \\\n  --tag seed   # seed\ncurl -d '{\"a\":\n  1}' # b\necho 'x # y' \"# z\"\n```",
			want: []readmeBlock{{file: "README.md", line: 1, commands: []readmeCommand{
				{line: 2, text: "A=1 replaycheck run \\\n  --tag seed   # seed", code: "A=1 replaycheck run \\\n  --tag seed", key: "A=1 replaycheck run \\ --tag seed"},
				{line: 4, text: "curl -d '{\"a\":\n  1}' # b", code: "curl -d '{\"a\":\n  1}'", key: "curl -d '{\"a\": 1}'"},
				{line: 6, text: "echo 'x # y' \"# z\"", code: "echo 'x # y' \"# z\"", key: "echo 'x # y' \"# z\""},
			}}},
		},
		{
			name: "indented",
			src:  "1. Record:\n   ```sh\n   replaycheck baseline -o b.yaml\n   ```\n",
			want: []readmeBlock{{file: "README.md", line: 2, commands: []readmeCommand{
				{line: 3, text: "replaycheck baseline -o b.yaml", code: "replaycheck baseline -o b.yaml", key: "replaycheck baseline -o b.yaml"},
			}}},
		},
		{name: "no closing fence", src: "```sh\nreplaycheck run\n", err: "README.md:1: the sh block has no closing fence"},
		{name: "open quote at the end", src: "```sh\necho 'x\n```\n", err: "README.md:2: the command does not end before its block does (an open quote or a trailing backslash)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readmeShellBlocks("README.md", tt.src)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error %v, want %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(readmeBlock{}, readmeCommand{})); diff != "" {
				t.Errorf("blocks (-want +got):\n%s", diff)
			}
		})
	}
}
