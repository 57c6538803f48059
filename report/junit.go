package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/replaycheck/replaycheck/harness/rules"
)

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes JUnit XML: one testsuite per target and one testcase per
// scenario on it. A scenario that failed, or whose checks could not judge,
// is a failure (type "fail" or "unknown") whose message is its first such
// check and whose text holds every check and the timeline.
func WriteJUnit(w io.Writer, s Suite) error {
	root := junitSuites{Name: "replaycheck", Time: seconds(s.Wall.D().Seconds())}
	index := map[string]int{}
	for _, r := range s.Results {
		h := r.History
		i, ok := index[h.Target]
		if !ok {
			i = len(root.Suites)
			index[h.Target] = i
			root.Suites = append(root.Suites, junitSuite{Name: h.Target})
		}
		c := junitCase{Name: h.Scenario, Classname: h.Target, File: h.File, Time: seconds(h.Duration.D().Seconds())}
		if r.Verdict != rules.Pass {
			var b strings.Builder
			writeDetails(&b, r)
			f := &junitFailure{Type: string(r.Verdict), Text: b.String()}
			for _, v := range r.Verdicts {
				if v.Status != rules.Pass {
					f.Message = v.Check + ": " + v.Message
					break
				}
			}
			c.Failure = f
			root.Suites[i].Failures++
			root.Failures++
		}
		root.Suites[i].Tests++
		root.Tests++
		root.Suites[i].Cases = append(root.Suites[i].Cases, c)
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

func seconds(s float64) string { return fmt.Sprintf("%.3f", s) }
