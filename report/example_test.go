package report_test

import (
	"bytes"
	"fmt"
	"os"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/wire"
	"github.com/replaycheck/replaycheck/report"
)

// suite is the seed's chat case on two targets: the guarded gateway wrote
// once, the naive one replayed the write. Reporters only render; the
// verdicts come from rules.Evaluate.
func suite() report.Suite {
	run := func(target string, writes int) *history.History {
		status := 500
		h := &history.History{
			Scenario: "chat follow-up 500", Target: target, Token: "rc0123456789", Entry: "alpha-rc0123456789",
			Expect:   history.Expect{Counts: history.Counts{Status: &status, Writes: history.Exactly(1)}},
			Requests: []history.Exchange{{Endpoint: "chat", Path: "/v1/chat/completions", Status: 500, CleanEnd: true}},
		}
		for range writes {
			h.MCP = append(h.MCP, wire.MCPEvent{Kind: "write", Tool: "commit_write", Entry: h.Entry})
		}
		return h
	}
	return report.Suite{Results: []rules.Result{
		rules.Evaluate(run("builtin:guarded", 1)),
		rules.Evaluate(run("builtin:naive", 2)),
	}}
}

func ExampleWriteTable() {
	if err := report.WriteTable(os.Stdout, suite(), report.TableOptions{}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// ┌────────────────────┬─────────────────┬─────────┬────────┬────────┬─────────┬───────────┬───────────┬────────┐
	// │      SCENARIO      │     TARGET      │ VERDICT │ STATUS │ WRITES │ INITIAL │ FOLLOW-UP │ MCP CALLS │ FAILED │
	// ├────────────────────┼─────────────────┼─────────┼────────┼────────┼─────────┼───────────┼───────────┼────────┤
	// │ chat follow-up 500 │ builtin:guarded │ pass    │ 500    │ 1      │ 0       │ 0         │ 0         │ -      │
	// │ chat follow-up 500 │ builtin:naive   │ fail    │ 500    │ 2      │ 0       │ 0         │ 0         │ writes │
	// └────────────────────┴─────────────────┴─────────┴────────┴────────┴─────────┴───────────┴───────────┴────────┘
	// 2 scenarios on builtin:guarded, builtin:naive: 1 pass, 1 fail, 0 unknown in 0s
	//
	// FAIL chat follow-up 500 on builtin:naive token rc0123456789
	//   FAIL writes: expected 1 write, observed 2
	//   timeline:
	//           +0s  app → target     POST /v1/chat/completions
	//           +0s  ledger           wrote alpha-rc0123456789
	//           +0s  ledger           wrote alpha-rc0123456789
	//           +0s  target → app     HTTP 500
}

// WriteJSON saves the histories with their verdicts; ReadJSON loads them
// back for re-reporting.
func ExampleWriteJSON() {
	var saved bytes.Buffer
	if err := report.WriteJSON(&saved, suite()); err != nil {
		fmt.Println(err)
		return
	}
	s, err := report.ReadJSON(&saved)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(report.TotalLine(s))
	for _, r := range s.Results {
		fmt.Println(r.History.Target, r.Verdict, r.Counts.Writes, "writes")
	}
	// Output:
	// 2 scenarios on builtin:guarded, builtin:naive: 1 pass, 1 fail, 0 unknown in 0s
	// builtin:guarded pass 1 writes
	// builtin:naive fail 2 writes
}

func ExampleWriteJUnit() {
	if err := report.WriteJUnit(os.Stdout, suite()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// <?xml version="1.0" encoding="UTF-8"?>
	// <testsuites name="replaycheck" tests="2" failures="1" errors="0" time="0.000">
	//   <testsuite name="builtin:guarded" tests="1" failures="0" errors="0" time="0.000">
	//     <properties>
	//       <property name="replaycheck.target" value="builtin:guarded"></property>
	//     </properties>
	//     <testcase name="chat follow-up 500" classname="builtin:guarded" time="0.000"></testcase>
	//   </testsuite>
	//   <testsuite name="builtin:naive" tests="1" failures="1" errors="0" time="0.000">
	//     <properties>
	//       <property name="replaycheck.target" value="builtin:naive"></property>
	//     </properties>
	//     <testcase name="chat follow-up 500" classname="builtin:naive" time="0.000">
	//       <failure message="writes: expected 1 write, observed 2" type="fail">FAIL chat follow-up 500 on builtin:naive token rc0123456789&#xA;  FAIL writes: expected 1 write, observed 2&#xA;  timeline:&#xA;          +0s  app → target     POST /v1/chat/completions&#xA;          +0s  ledger           wrote alpha-rc0123456789&#xA;          +0s  ledger           wrote alpha-rc0123456789&#xA;          +0s  target → app     HTTP 500&#xA;</failure>
	//     </testcase>
	//   </testsuite>
	// </testsuites>
}

func ExampleWriteMarkdown() {
	if err := report.WriteMarkdown(os.Stdout, suite()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// ## ❌ replaycheck
	//
	// 2 scenarios on builtin:guarded, builtin:naive: 1 pass, 1 fail, 0 unknown in 0s
	//
	// | Scenario | Target | Verdict | Status | Writes | Initial | Follow-up | MCP calls | Failed checks |
	// |---|---|---|---|--:|--:|--:|--:|---|
	// | chat follow-up 500 | builtin:naive | fail | 500 | 2 | 0 | 0 | 0 | writes |
	// | chat follow-up 500 | builtin:guarded | pass | 500 | 1 | 0 | 0 | 0 | - |
	//
	// ### chat follow-up 500 on builtin:naive: fail
	//
	// - **fail** `writes`: expected 1 write, observed 2
	//
	// <details><summary>timeline</summary>
	//
	// ```
	//       +0s  app → target     POST /v1/chat/completions
	//       +0s  ledger           wrote alpha-rc0123456789
	//       +0s  ledger           wrote alpha-rc0123456789
	//       +0s  target → app     HTTP 500
	// ```
	//
	// </details>
}
