package control

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/runtoken"
	"github.com/replaycheck/replaycheck/internal/wire"
	"github.com/replaycheck/replaycheck/internal/yamlfile"
)

// FaultRequest is the body of POST and PUT faults, in YAML or JSON: the
// faults of both fakes in the shapes of a scenario's faults, for one run
// token (Run) or, with Run empty, for every request. POST adds them after
// those armed already; PUT replaces the faults armed before for the same run
// (or the global ones) on both fakes.
type FaultRequest struct {
	Run      string           `yaml:"run,omitempty" json:"run,omitempty"`
	Upstream []upstream.Fault `yaml:"upstream,omitempty" json:"upstream,omitempty"`
	MCP      []ledger.Fault   `yaml:"mcp,omitempty" json:"mcp,omitempty"`
}

// ArmedFault is one armed fault as GET faults lists it: its id, the run it
// is armed for ("" = every request), the fault (Upstream or MCP, in the
// shape FaultRequest takes), and what it did, in total and per run token.
type ArmedFault struct {
	ID       string          `json:"id"`
	Run      string          `json:"run"`
	Upstream *upstream.Fault `json:"upstream,omitempty"`
	MCP      *ledger.Fault   `json:"mcp,omitempty"`
	// Matched counts the requests (model requests, or MCP calls and session
	// steps) it matched; Fired how many of them it acted on.
	Matched int `json:"matched"`
	Fired   int `json:"fired"`
	// Runs are Matched and Fired per run token, in token order.
	Runs []wire.FaultRunCounts `json:"runs"`
}

// ArmedFaults is the answer of GET, POST and PUT faults: the faults armed
// (for POST, the ones it added; for PUT, the ones armed for its run now),
// upstream ones first, each side in armed order.
type ArmedFaults struct {
	Faults []ArmedFault `json:"faults"`
}

// Cleared is the answer of DELETE faults: the ids of the faults disarmed.
type Cleared struct {
	Cleared bool     `json:"cleared"`
	Removed []string `json:"removed"`
}

// Fault ids are the fake's own id after its side: upstream-3, mcp-1.
const (
	upstreamPrefix = wire.FaultUpstream + "-"
	mcpPrefix      = wire.FaultMCP + "-"
)

func upstreamID(id uint64) string { return upstreamPrefix + strconv.FormatUint(id, 10) }
func mcpID(id uint64) string      { return mcpPrefix + strconv.FormatUint(id, 10) }

// parseID splits a fault id into its side and the fake's id.
func parseID(id string) (side string, n uint64, ok bool) {
	for _, p := range []string{upstreamPrefix, mcpPrefix} {
		if rest, found := strings.CutPrefix(id, p); found {
			n, err := strconv.ParseUint(rest, 10, 64)
			return strings.TrimSuffix(p, "-"), n, err == nil
		}
	}
	return "", 0, false
}

// armed returns every armed fault, global ones first, then each run's in
// token order; only run's when only is true ("" = the global ones).
func (a *API) armed(run string, only bool) []ArmedFault {
	runs := []string{run}
	if !only {
		tokens := a.Upstream.Tokens()
		for _, t := range a.Ledger.Tokens() {
			if !slices.Contains(tokens, t) {
				tokens = append(tokens, t)
			}
		}
		tokens = slices.DeleteFunc(tokens, func(t string) bool { return t == "" })
		slices.Sort(tokens)
		runs = append([]string{""}, tokens...)
	}
	out := []ArmedFault{}
	for _, r := range runs {
		up, reps := a.Upstream.ArmedFaults(r)
		for i, rep := range reps {
			out = append(out, ArmedFault{ID: upstreamID(rep.ID), Run: r, Upstream: &up[i], Matched: rep.Matched, Fired: rep.Fired, Runs: orEmpty(rep.Runs)})
		}
		mcp, reps := a.Ledger.ArmedFaults(r)
		for i, rep := range reps {
			out = append(out, ArmedFault{ID: mcpID(rep.ID), Run: r, MCP: &mcp[i], Matched: rep.Matched, Fired: rep.Fired, Runs: orEmpty(rep.Runs)})
		}
	}
	return out
}

func orEmpty(runs []wire.FaultRunCounts) []wire.FaultRunCounts {
	if runs == nil {
		return []wire.FaultRunCounts{}
	}
	return runs
}

// runQuery returns the run ?run= names, and whether the query names one.
func runQuery(r *http.Request) (run string, given bool, err error) {
	q := r.URL.Query()
	run = q.Get("run")
	if run != "" && !runtoken.Valid(run) {
		return "", false, fmt.Errorf("run: %q is not a run token", run)
	}
	return run, q.Has("run"), nil
}

func (a *API) listFaults(w http.ResponseWriter, r *http.Request) {
	run, given, err := runQuery(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, ArmedFaults{Faults: a.armed(run, given)})
}

// readFaults reads and checks a POST or PUT body; on a problem it answers
// 400 and returns false.
func (a *API) readFaults(w http.ResponseWriter, r *http.Request) (FaultRequest, bool) {
	src, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading the body: "+err.Error())
		return FaultRequest{}, false
	}
	req, bad := parseFaults(src, a.Upstream.CheckFault, a.Ledger.CheckFault)
	if bad != nil {
		writeJSON(w, http.StatusBadRequest, bad)
		return req, false
	}
	return req, true
}

func (a *API) addFaults(w http.ResponseWriter, r *http.Request) {
	req, ok := a.readFaults(w, r)
	if !ok {
		return
	}
	if len(req.Upstream)+len(req.MCP) == 0 {
		writeError(w, http.StatusBadRequest, "no faults to add: give upstream: [...] or mcp: [...]")
		return
	}
	// Both checked by the fakes themselves: adding cannot fail half-way.
	up, err := a.Upstream.AddFaults(req.Run, req.Upstream)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	mcp, err := a.Ledger.AddFaults(req.Run, req.MCP)
	if err != nil {
		for _, id := range up {
			a.Upstream.RemoveFault(id)
		}
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	var ids []string
	for _, id := range up {
		ids = append(ids, upstreamID(id))
	}
	for _, id := range mcp {
		ids = append(ids, mcpID(id))
	}
	added := slices.DeleteFunc(a.armed(req.Run, true), func(f ArmedFault) bool { return !slices.Contains(ids, f.ID) })
	if len(ids) == 1 {
		w.Header().Set("Location", Prefix+"faults/"+ids[0])
	}
	writeJSON(w, http.StatusCreated, ArmedFaults{Faults: added})
}

func (a *API) replaceFaults(w http.ResponseWriter, r *http.Request) {
	req, ok := a.readFaults(w, r)
	if !ok {
		return
	}
	// Both checked by the fakes themselves: arming cannot fail half-way.
	if err := a.Upstream.Arm(req.Run, nil, req.Upstream); err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if err := a.Ledger.Arm(req.Run, req.MCP); err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, ArmedFaults{Faults: a.armed(req.Run, true)})
}

func (a *API) clearFaults(w http.ResponseWriter, r *http.Request) {
	run, given, err := runQuery(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	out := Cleared{Cleared: true, Removed: []string{}}
	for _, f := range a.armed(run, given) {
		if a.remove(f.ID) {
			out.Removed = append(out.Removed, f.ID)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// remove disarms the fault with id and reports whether one was armed.
func (a *API) remove(id string) bool {
	side, n, ok := parseID(id)
	switch {
	case !ok:
		return false
	case side == wire.FaultUpstream:
		return a.Upstream.RemoveFault(n)
	default:
		return a.Ledger.RemoveFault(n)
	}
}

// find returns the armed fault with id; on none it answers 404 and returns
// false.
func (a *API) find(w http.ResponseWriter, r *http.Request) (ArmedFault, bool) {
	id := r.PathValue("id")
	if _, _, ok := parseID(id); ok {
		for _, f := range a.armed("", false) {
			if f.ID == id {
				return f, true
			}
		}
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("fault %q: none armed with this id (ids look like upstream-1 or mcp-2; GET faults lists them)", id))
	return ArmedFault{}, false
}

func (a *API) getFault(w http.ResponseWriter, r *http.Request) {
	if f, ok := a.find(w, r); ok {
		writeJSON(w, http.StatusOK, f)
	}
}

func (a *API) deleteFault(w http.ResponseWriter, r *http.Request) {
	f, ok := a.find(w, r)
	if !ok {
		return
	}
	if !a.remove(f.ID) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("fault %q: disarmed meanwhile", f.ID))
		return
	}
	writeJSON(w, http.StatusOK, f)
}

// parseFaults decodes and validates a fault request, strictly: an unknown
// field, a bad value or a fault a fake would refuse (checkUp, checkMCP) is
// a Problem at its place.
func parseFaults(src []byte, checkUp func(upstream.Fault) error, checkMCP func(ledger.Fault) error) (FaultRequest, *Problem) {
	const file = "faults"
	var req FaultRequest
	if err := yamlfile.Decode(file, src, &req); err != nil {
		return req, problem(err)
	}
	body, _ := yamlfile.ParseDocument(file, src)
	if req.Run != "" && !runtoken.Valid(req.Run) {
		return req, problem(yamlfile.ErrorAt(file, src, yamlfile.At(body, "run"), "run: %q is not a run token", req.Run))
	}
	for i, f := range req.Upstream {
		if err := checkUp(f); err != nil {
			return req, problem(yamlfile.ErrorAt(file, src, yamlfile.At(body, "upstream", i), "upstream[%d]: %v", i, err))
		}
	}
	for i, f := range req.MCP {
		if err := checkMCP(f); err != nil {
			return req, problem(yamlfile.ErrorAt(file, src, yamlfile.At(body, "mcp", i), "mcp[%d]: %v", i, err))
		}
	}
	return req, nil
}
