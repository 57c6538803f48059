package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/replaycheck/replaycheck/internal/harness/baseline"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// The JUnit document follows Jenkins' junit-10.xsd (the xUnit plugin's
// schema), with one addition GitHub's and GitLab's readers use: a testcase's
// file attribute.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string           `xml:"name,attr"`
	Tests      int              `xml:"tests,attr"`
	Failures   int              `xml:"failures,attr"`
	Errors     int              `xml:"errors,attr"`
	Skipped    int              `xml:"skipped,attr,omitempty"`
	Time       string           `xml:"time,attr"`
	Properties *junitProperties `xml:"properties,omitempty"`
	Cases      []junitCase      `xml:"testcase"`
}

type junitProperties struct {
	Property []junitProperty `xml:"property"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Error     *junitFailure `xml:"error,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

// junitFailure is a <failure> or an <error>.
type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// abortSuite names the testsuite that holds a run's abort.
const abortSuite = "replaycheck"

// WriteJUnit writes JUnit XML: one testsuite per target and one testcase per
// scenario on it. A scenario that failed is a failure (type "fail"), one
// whose checks could not judge an error (type "unknown"); the message is its
// first such check and the text holds every check and the timeline. A run's
// notes (a retry-after hint, knobs not applied) and the MCP protocol
// versions it negotiated ("mcp protocol: 2026-07-28") are its system-out. A
// repeated scenario is one testcase: its time is its runs' added up, and its
// first check (repeat) gives the rate, in the failure or, when it passed, in
// system-out. Each testsuite's properties name its target and, when known,
// the replaycheck version, seed and shard.
//
// Judged against a baseline, a known failure is a skipped testcase (message
// "known failure (baseline): …"), a new one a failure, and a result with
// stale entries a failure of type "stale" naming the entries to remove.
//
// A suite whose run did not complete (s.Abort) also has a testsuite
// "replaycheck" with one testcase whose error (of the abort's kind) holds
// the run's error; each run an interrupt cut short is a testcase of its
// target with an error of type "interrupted".
func WriteJUnit(w io.Writer, s Suite) error {
	return scrubbed(w, "JUnit report", func(w io.Writer) error { return writeJUnit(w, s) })
}

// writeJUnit is WriteJUnit before scrubbing.
func writeJUnit(w io.Writer, s Suite) error {
	root := junitSuites{Name: "replaycheck", Time: seconds(s.Wall.D().Seconds())}
	index := map[string]int{}
	suiteOf := func(name string) int {
		i, ok := index[name]
		if !ok {
			i = len(root.Suites)
			index[name] = i
			root.Suites = append(root.Suites, junitSuite{Name: name, Properties: junitProps(s.Run, name)})
		}
		return i
	}
	add := func(i int, c junitCase) {
		switch {
		case c.Failure != nil:
			root.Suites[i].Failures++
			root.Failures++
		case c.Error != nil:
			root.Suites[i].Errors++
			root.Errors++
		case c.Skipped != nil:
			root.Suites[i].Skipped++
		}
		root.Suites[i].Tests++
		root.Tests++
		root.Suites[i].Cases = append(root.Suites[i].Cases, c)
	}
	for n, r := range s.Results {
		h := r.History
		bv := baselineOf(s, n)
		i := suiteOf(h.Target)
		c := junitCase{Name: h.Scenario, Classname: h.Target, File: h.File, Time: seconds(h.Duration.D().Seconds())}
		if r.Repeat != nil {
			// The runs' time; the rate of a pass here, of anything else
			// in its failure.
			c.Time = seconds(r.Repeat.Duration.D().Seconds())
			if r.Verdict == rules.Pass {
				c.SystemOut += r.Verdicts[0].Check + ": " + r.Verdicts[0].Message + "\n"
			}
		}
		if len(r.Counts.Protocols) > 0 {
			c.SystemOut += "mcp protocol: " + wire.MCPProtocolsText(r.Counts.Protocols) + "\n"
		}
		for _, n := range h.Notes {
			c.SystemOut += "note: " + n + "\n"
		}
		var b strings.Builder
		if r.Verdict != rules.Pass && r.Verdict != rules.Skipped {
			writeDetails(&b, r, bv, true)
		}
		switch {
		case r.Verdict == rules.Skipped && bv == nil:
			c.Skipped = &junitSkipped{Message: firstNotPassing(r, bv, false)}
		case bv != nil && bv.Status == baseline.Known:
			c.Skipped = &junitSkipped{Message: knownLabel + ": " + firstNotPassing(r, bv, true), Text: b.String()}
		case bv != nil && bv.Status == baseline.Stale:
			var text strings.Builder
			for _, e := range bv.StaleEntries() {
				text.WriteString(staleMessage(e) + "\n")
			}
			c.Failure = &junitFailure{Type: string(baseline.Stale), Message: staleMessage(bv.StaleEntries()[0]), Text: text.String() + b.String()}
		case r.Verdict != rules.Pass:
			if bv != nil {
				for _, e := range bv.StaleEntries() {
					b.WriteString("STALE " + staleMessage(e) + "\n")
				}
			}
			f := &junitFailure{Type: string(r.Verdict), Message: firstNotPassing(r, bv, false), Text: b.String()}
			if r.Verdict == rules.Fail {
				c.Failure = f
			} else {
				c.Error = f
			}
		}
		add(i, c)
	}
	if a := s.Abort; a != nil {
		for _, ref := range a.CutShort {
			add(suiteOf(ref.Target), junitCase{Name: ref.Scenario, Classname: ref.Target, File: ref.File, Time: seconds(0),
				Error: &junitFailure{Type: string(AbortInterrupted), Message: abortCutMessage(ref)}})
		}
		add(suiteOf(abortSuite), junitCase{Name: abortCaseName(a), Classname: abortSuite, Time: seconds(s.Wall.D().Seconds()),
			Error: &junitFailure{Type: string(a.Kind), Message: firstLine(a.Error), Text: strings.Join(AbortLines(s), "\n") + "\n"}})
	}
	for i := range root.Suites {
		var sum float64
		for _, c := range root.Suites[i].Cases {
			var t float64
			fmt.Sscan(c.Time, &t)
			sum += t
		}
		root.Suites[i].Time = seconds(sum)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("writing JUnit report: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(root); err != nil {
		return fmt.Errorf("writing JUnit report: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// junitProps renders the properties of the testsuite of target: the run's
// version, seed and shard when known, and the target.
func junitProps(run *RunInfo, target string) *junitProperties {
	p := &junitProperties{}
	prop := func(name, value string) {
		if value != "" {
			p.Property = append(p.Property, junitProperty{Name: name, Value: value})
		}
	}
	if run != nil {
		prop("replaycheck.version", run.Replaycheck)
		prop("replaycheck.seed", run.Seed)
		prop("replaycheck.shard", run.Shard)
	}
	if target != abortSuite {
		prop("replaycheck.target", target)
	}
	if len(p.Property) == 0 {
		return nil
	}
	return p
}

func seconds(s float64) string { return fmt.Sprintf("%.3f", s) }

// firstNotPassing renders r's first check that did not pass and that bv
// lists (wantKnown) or does not list; without a baseline, the first one.
func firstNotPassing(r rules.Result, bv *baseline.Verdict, wantKnown bool) string {
	for _, v := range r.Verdicts {
		if v.Status != rules.Pass && known(bv, v.Check) == wantKnown {
			return v.Check + ": " + v.Message
		}
	}
	return string(r.Verdict)
}
