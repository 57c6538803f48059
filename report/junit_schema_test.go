package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
)

// unknownFixture is one result whose checks could not judge: the
// is-error-not-retried rule saw no isError answer.
func unknownFixture() Suite {
	h := seedRun("builtin:guarded", 1)
	h.Scenario = "isError answered"
	h.Expect.Rules = []string{"is-error-not-retried"}
	return Suite{Results: []rules.Result{rules.Evaluate(h)}, Wall: ms(12), Run: &RunInfo{Replaycheck: "v1.2.3", Seed: "replaycheck"}}
}

// interruptedFixture is a run stopped by SIGTERM: the guarded run ended, the
// naive one was cut short and three more never started.
func interruptedFixture() Suite {
	s := fixture()
	s.Results = s.Results[:1]
	s.Abort = &Abort{Kind: AbortInterrupted, Error: "terminated signal received", NotStarted: 3,
		CutShort: []RunRef{{Scenario: "chat follow-up 500 after tool ran", Target: "builtin:naive", File: "scenarios/seed/chat.yaml"}}}
	return s
}

// usageFixture is a run that never started: a bad scenario file.
func usageFixture() Suite {
	return Suite{Run: &RunInfo{Replaycheck: "v1.2.3", Seed: "replaycheck", Shard: "1/3"},
		Abort: &Abort{Kind: AbortUsage, Error: `loading scenarios: bad.yaml:3:21: unknown field "bogus"`}}
}

// junitFixtures are every shape of suite the JUnit writer renders.
var junitFixtures = []struct {
	name  string
	suite func() Suite
}{
	{"plain", fixture},
	{"baseline", baselineFixture},
	{"repeat", repeatFixture},
	{"unknown", unknownFixture},
	{"interrupted", interruptedFixture},
	{"bad input", usageFixture},
}

// xmlNode is any XML element with its attributes and children.
type xmlNode struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Children []xmlNode  `xml:",any"`
}

func (n xmlNode) attr(name string) (string, bool) {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value, true
		}
	}
	return "", false
}

func (n xmlNode) count(child string) int {
	c := 0
	for _, k := range n.Children {
		if k.XMLName.Local == child {
			c++
		}
	}
	return c
}

// junitShape is what junit-10.xsd allows an element: its attributes, those
// it requires, and its children. The testcase's file attribute is the one
// addition replaycheck makes (GitHub's and GitLab's readers use it).
var junitShape = map[string]struct{ attrs, required, children []string }{
	"testsuites": {attrs: []string{"name", "time", "tests", "failures", "errors"}, children: []string{"testsuite"}},
	"testsuite": {
		attrs:    []string{"name", "tests", "failures", "errors", "group", "time", "skipped", "timestamp", "hostname", "id", "package", "file", "log", "url"},
		required: []string{"name", "tests", "failures", "errors"},
		children: []string{"testsuite", "properties", "testcase", "system-out", "system-err"},
	},
	"properties": {children: []string{"property"}},
	"property":   {attrs: []string{"name", "value"}, required: []string{"name", "value"}},
	"testcase": {attrs: []string{"name", "time", "classname", "group", "file"}, required: []string{"name"},
		children: []string{"skipped", "error", "failure", "system-out", "system-err"}},
	"failure":    {attrs: []string{"type", "message"}},
	"error":      {attrs: []string{"type", "message"}},
	"skipped":    {attrs: []string{"type", "message"}},
	"system-out": {},
	"system-err": {},
}

// surefireTime is junit-10.xsd's SUREFIRE_TIME.
var surefireTime = regexp.MustCompile(`^(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]*)?$`)

// checkJUnitShape checks n and its children against junitShape, and the
// counts of every testsuite and of the testsuites against their testcases.
func checkJUnitShape(t *testing.T, n xmlNode, path string) (tests, failures, errs, skipped int) {
	t.Helper()
	name := n.XMLName.Local
	path += "/" + name
	shape, ok := junitShape[name]
	if !ok {
		t.Errorf("%s: junit-10.xsd has no element %s", path, name)
		return
	}
	for _, a := range n.Attrs {
		if !slices.Contains(shape.attrs, a.Name.Local) {
			t.Errorf("%s: junit-10.xsd allows no attribute %s", path, a.Name.Local)
		}
	}
	for _, r := range shape.required {
		if _, ok := n.attr(r); !ok {
			t.Errorf("%s: junit-10.xsd requires the attribute %s", path, r)
		}
	}
	if v, ok := n.attr("time"); ok && name != "testcase" && !surefireTime.MatchString(v) {
		t.Errorf("%s: time %q is not a SUREFIRE_TIME", path, v)
	}
	for _, c := range n.Children {
		if !slices.Contains(shape.children, c.XMLName.Local) {
			t.Errorf("%s: junit-10.xsd allows no child %s", path, c.XMLName.Local)
		}
	}
	counted := func(attr string, want int) {
		v, ok := n.attr(attr)
		if !ok && attr == "skipped" {
			v = "0"
		}
		if got, err := strconv.Atoi(v); err != nil || got != want {
			t.Errorf("%s %q: %s=%q, but it holds %d", path, firstAttr(n, "name"), attr, v, want)
		}
	}
	switch name {
	case "testcase":
		return 1, n.count("failure"), n.count("error"), n.count("skipped")
	case "testsuite", "testsuites":
		for _, c := range n.Children {
			if c.XMLName.Local != "testsuite" && c.XMLName.Local != "testcase" {
				checkJUnitShape(t, c, path)
				continue
			}
			a, b, c, d := checkJUnitShape(t, c, path)
			tests, failures, errs, skipped = tests+a, failures+b, errs+c, skipped+d
		}
		counted("tests", tests)
		counted("failures", failures)
		counted("errors", errs)
		if name == "testsuite" {
			counted("skipped", skipped)
		}
	default:
		for _, c := range n.Children {
			checkJUnitShape(t, c, path)
		}
	}
	return
}

func firstAttr(n xmlNode, name string) string {
	v, _ := n.attr(name)
	return v
}

// withoutTestcaseFile copies a JUnit document without the testcases' file
// attributes, the one thing junit-10.xsd does not list.
func withoutTestcaseFile(t *testing.T, doc []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	dec := xml.NewDecoder(bytes.NewReader(doc))
	enc := xml.NewEncoder(&out)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "testcase" {
			se.Attr = slices.DeleteFunc(slices.Clone(se.Attr), func(a xml.Attr) bool { return a.Name.Local == "file" })
			tok = se
		}
		if err := enc.EncodeToken(xml.CopyToken(tok)); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestJUnitMatchesJenkinsSchema checks every shape of JUnit report against
// Jenkins' junit-10.xsd: always against the schema's rules written out
// above (attributes, required attributes, children, counts), and, when
// xmllint is installed (Debian's libxml2-utils), with xmllint --schema on
// the document less the testcases' file attributes.
func TestJUnitMatchesJenkinsSchema(t *testing.T) {
	xmllint, lintErr := exec.LookPath("xmllint")
	for _, tt := range junitFixtures {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteJUnit(&b, tt.suite()); err != nil {
				t.Fatal(err)
			}
			var root xmlNode
			if err := xml.Unmarshal(b.Bytes(), &root); err != nil {
				t.Fatalf("JUnit does not parse: %v", err)
			}
			if root.XMLName.Local != "testsuites" {
				t.Fatalf("root is <%s>, want <testsuites>", root.XMLName.Local)
			}
			checkJUnitShape(t, root, "")
			if lintErr != nil {
				t.Log("xmllint not installed (apt-get install libxml2-utils): schema checked by the rules above only")
				return
			}
			doc := filepath.Join(t.TempDir(), "junit.xml")
			if err := os.WriteFile(doc, withoutTestcaseFile(t, b.Bytes()), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(xmllint, "--noout", "--schema", filepath.Join("testdata", "junit-10.xsd"), doc).CombinedOutput()
			if err != nil {
				t.Errorf("xmllint --schema junit-10.xsd: %v\n%s\n%s", err, out, b.Bytes())
			}
		})
	}
}

// TestJUnitVerdictElements checks which element each kind of result gets: a
// failure for fail and stale, an error for unknown, an abort and a run cut
// short, skipped for a known failure, nothing for a pass.
func TestJUnitVerdictElements(t *testing.T) {
	tests := []struct {
		name  string
		suite func() Suite
		want  []string // one per testcase: "suite/name: element type"
	}{
		{"fail", fixture, []string{
			"builtin:guarded/chat follow-up 500 after tool ran: pass",
			"builtin:naive/chat follow-up 500 after tool ran: failure fail",
		}},
		{"unknown", unknownFixture, []string{"builtin:guarded/isError answered: error unknown"}},
		{"baseline", baselineFixture, []string{
			"builtin:guarded/chat follow-up 500 after tool ran: failure stale",
			"builtin:naive/chat follow-up 500 after tool ran: failure fail",
			"builtin:naive/chat follow-up 500, known: skipped",
		}},
		{"interrupted", interruptedFixture, []string{
			"builtin:guarded/chat follow-up 500 after tool ran: pass",
			"builtin:naive/chat follow-up 500 after tool ran: error interrupted",
			"replaycheck/replaycheck run: interrupted: error interrupted",
		}},
		{"bad input", usageFixture, []string{"replaycheck/replaycheck run: bad input: error usage"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, s := range parseJUnit(t, tt.suite()).Suites {
				for _, c := range s.Cases {
					el := "pass"
					switch {
					case c.Failure != nil:
						el = "failure " + c.Failure.Type
					case c.Error != nil:
						el = "error " + c.Error.Type
					case c.Skipped != nil:
						el = "skipped"
					}
					got = append(got, s.Name+"/"+c.Name+": "+el)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("testcases (-want +got):\n%s", diff)
			}
		})
	}
}

// TestJUnitProperties checks each testsuite's properties: the run's
// version, seed and shard, and the suite's target.
func TestJUnitProperties(t *testing.T) {
	tests := []struct {
		name  string
		suite func() Suite
		want  map[string][]string // testsuite name: its properties, name=value
	}{
		{"run known", fixture, map[string][]string{
			"builtin:guarded": {"replaycheck.version=v1.2.3", "replaycheck.seed=replaycheck", "replaycheck.shard=2/3", "replaycheck.target=builtin:guarded"},
			"builtin:naive":   {"replaycheck.version=v1.2.3", "replaycheck.seed=replaycheck", "replaycheck.shard=2/3", "replaycheck.target=builtin:naive"},
		}},
		{"no shard", unknownFixture, map[string][]string{
			"builtin:guarded": {"replaycheck.version=v1.2.3", "replaycheck.seed=replaycheck", "replaycheck.target=builtin:guarded"},
		}},
		{"run not known", baselineFixture, map[string][]string{
			"builtin:guarded": {"replaycheck.target=builtin:guarded"},
			"builtin:naive":   {"replaycheck.target=builtin:naive"},
		}},
		{"abort", usageFixture, map[string][]string{
			"replaycheck": {"replaycheck.version=v1.2.3", "replaycheck.seed=replaycheck", "replaycheck.shard=1/3"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string][]string{}
			for _, s := range parseJUnit(t, tt.suite()).Suites {
				got[s.Name] = []string{}
				if s.Properties != nil {
					for _, p := range s.Properties.Property {
						got[s.Name] = append(got[s.Name], p.Name+"="+p.Value)
					}
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("properties (-want +got):\n%s", diff)
			}
		})
	}
}
