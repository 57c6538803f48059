package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/replaycheck/replaycheck/internal/harness/run"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/harness/targetfile"
)

// resolveTargets turns --target values into targets: builtin:… names and
// target files (kind proxy or client). Every error is the user's (exit 2):
// an unknown name, a bad file (file:line:col), or two targets of one name.
func resolveTargets(args []string, opts targetfile.Options) ([]target.Target, error) {
	var out []target.Target
	seen := map[string]string{}
	for _, a := range args {
		t, err := targetfile.Resolve(a, opts)
		if err != nil {
			return nil, asUsage(fmt.Errorf("--target %s: %w", a, err))
		}
		if prev, dup := seen[t.Name()]; dup {
			return nil, asUsage(fmt.Errorf("--target %s: target name %q is also the name of --target %s; give one a name of its own", a, t.Name(), prev))
		}
		seen[t.Name()] = a
		out = append(out, t)
	}
	return out, nil
}

// checkApplies says on w how many (scenario, target) pairs of whole, the
// selection before sharding, are skipped: a scenario with client
// expectations runs on client targets only, a client target runs only
// those, a target that serves some endpoints only (the built-in gateway
// has no gemini) skips scenarios sending others, and one that does not
// speak a scenario's MCP transport (a proxy, stdio) skips it, as does a
// client whose file declares dialects none of a scenario's faults act on.
// None that applies is the user's error.
func checkApplies(w io.Writer, whole []*scenario.Scenario, targets []target.Target) error {
	applies, skipped := 0, 0
	var unserved []string               // "target does not serve endpoint", once each
	var unspoken []string               // "target does not speak MCP over transport", once each
	unspokenBy := map[string][]string{} // unspoken's entries: the scenarios skipped
	var uncalled []string               // "target calls only …", once each
	uncalledBy := map[string][]string{} // uncalled's entries: the scenarios skipped
	var unresumed []string              // "target has no resume", once each
	unresumedBy := map[string][]string{}
	for _, s := range whole {
		for _, t := range targets {
			if run.Applies(s, t) {
				applies++
				continue
			}
			skipped++
			if s.Resumes() && !t.Traits().Resumes {
				u := t.Name() + " cannot be resumed (its target file has no resume)"
				if !slices.Contains(unresumed, u) {
					unresumed = append(unresumed, u)
				}
				unresumedBy[u] = append(unresumedBy[u], s.Name)
				continue
			}
			if tr := s.MCPTransport(); !target.Speaks(t, tr) {
				u := t.Name() + " does not speak MCP over " + string(tr)
				if !slices.Contains(unspoken, u) {
					unspoken = append(unspoken, u)
				}
				unspokenBy[u] = append(unspokenBy[u], s.Name)
				continue
			}
			if s.Expect.Client != nil && !target.Calls(t, s) {
				u := fmt.Sprintf("%s calls only %s (its file's dialects), and these scenarios' faults act on %s",
					t.Name(), strings.Join(t.Traits().Dialects, ", "), strings.Join(s.Dialects(), ", "))
				if !slices.Contains(uncalled, u) {
					uncalled = append(uncalled, u)
				}
				uncalledBy[u] = append(uncalledBy[u], s.Name)
				continue
			}
			if e := target.Unserved(t, s.AllRequests()); e != "" && !t.Traits().Client && s.Expect.Client == nil {
				if u := t.Name() + " does not serve " + string(e); !slices.Contains(unserved, u) {
					unserved = append(unserved, u)
				}
			}
		}
	}
	also := ""
	if len(unserved) > 0 {
		also = "; " + strings.Join(unserved, ", ") + " (a client target can: scenarios/clients)"
	}
	if len(unspoken) > 0 {
		named := make([]string, len(unspoken))
		for i, u := range unspoken {
			named[i] = u + ": " + quotedNames(unspokenBy[u], 5)
		}
		also += "; " + strings.Join(named, "; ") + " (the scenario's mcp.transport, or the transport its MCP faults need)"
	}
	for _, u := range uncalled {
		also += "; " + u + ": " + quotedNames(uncalledBy[u], 5)
	}
	for _, u := range unresumed {
		also += "; " + u + ": " + quotedNames(unresumedBy[u], 5) + " (they kill the target and resume it: faults.target)"
	}
	if applies == 0 {
		return asUsage(fmt.Errorf("no selected scenario applies to the targets: scenarios with expect.client need a client target, and a client target runs only those (e.g. scenarios/clients)%s", also))
	}
	if skipped > 0 {
		fmt.Fprintf(w, "skipping %s: scenarios with expect.client run on client targets only, and client targets run only those%s\n", countOf(skipped, "scenario run", "scenario runs"), also)
	}
	return nil
}

// quotedNames returns names quoted and joined by commas, the first most of
// them and "… N more" for the rest.
func quotedNames(names []string, most int) string {
	var q []string
	for i, n := range names {
		if i == most {
			q = append(q, fmt.Sprintf("… %d more", len(names)-most))
			break
		}
		q = append(q, strconv.Quote(n))
	}
	return strings.Join(q, ", ")
}
