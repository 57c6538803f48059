package report

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
)

// parseHTML writes s as HTML and parses it.
func parseHTML(t *testing.T, s Suite, opts HTMLOptions) (*html.Node, string) {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTMLWith(&b, s, opts); err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return doc, b.String()
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func hasClass(n *html.Node, class string) bool {
	v, _ := attr(n, "class")
	return slices.Contains(strings.Fields(v), class)
}

// find returns the elements under n named tag (any when "") with class
// (any when ""), in document order.
func find(n *html.Node, tag, class string) []*html.Node {
	var out []*html.Node
	for c := range n.Descendants() {
		if c.Type == html.ElementNode && (tag == "" || c.Data == tag) && (class == "" || hasClass(c, class)) {
			out = append(out, c)
		}
	}
	return out
}

func text(n *html.Node) string {
	var b strings.Builder
	for c := range n.Descendants() {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return b.String()
}

func byID(t *testing.T, doc *html.Node, id string) *html.Node {
	t.Helper()
	for _, n := range find(doc, "", "") {
		if v, _ := attr(n, "id"); v == id {
			return n
		}
	}
	t.Fatalf("no element #%s", id)
	return nil
}

// TestHTMLReport checks the HTML report of a saved naive run: one file that
// fetches nothing, a summary row per result linking to its section (the
// failures first and open, the pass collapsed), and seed 000's sequence
// diagram with its four lifelines, an arrow per step, the three injected
// 500s marked where they hit, the two replays highlighted with their
// writes, the attempts ruled off, the translation explained, and the app's
// answer.
func TestHTMLReport(t *testing.T) {
	s := naiveRun(t)
	doc, raw := parseHTML(t, s, HTMLOptions{})

	for _, tag := range []string{"script", "link", "img", "iframe", "object", "embed"} {
		if n := find(doc, tag, ""); len(n) > 0 {
			t.Errorf("%d <%s> elements, want none: the report is self-contained", len(n), tag)
		}
	}
	for _, n := range find(doc, "", "") {
		for _, a := range n.Attr {
			if (a.Key == "href" || a.Key == "src") && !strings.HasPrefix(a.Val, "#") {
				t.Errorf("<%s %s=%q>: want only links inside the page", n.Data, a.Key, a.Val)
			}
		}
	}
	if strings.Contains(raw, "url(") || strings.Contains(raw, "@import") || strings.Contains(raw, "http://") && !strings.Contains(raw, `xmlns="http://www.w3.org/2000/svg"`) {
		t.Error("the report references something outside it")
	}

	rows := find(find(doc, "table", "summary")[0], "tr", "")[1:]
	if len(rows) != len(s.Results) {
		t.Fatalf("%d summary rows, want %d", len(rows), len(s.Results))
	}
	var verdicts []string
	for _, r := range rows {
		verdicts = append(verdicts, text(find(r, "span", "verdict")[0]))
		href, _ := attr(find(r, "a", "")[0], "href")
		sec := byID(t, doc, strings.TrimPrefix(href, "#"))
		_, open := attr(sec, "open")
		if want := text(find(r, "span", "verdict")[0]) == "fail"; open != want {
			t.Errorf("section %s: open %v, want %v", href, open, want)
		}
	}
	if i := slices.Index(verdicts, "pass"); i != len(verdicts)-1 {
		t.Errorf("verdicts in order %v: want the failures first", verdicts)
	}

	var seed *html.Node
	for _, sec := range find(doc, "details", "result") {
		if strings.Contains(text(find(sec, "summary", "")[0]), "seed messages fault_on") {
			seed = sec
		}
	}
	if seed == nil {
		t.Fatal("no section of seed messages fault_on")
	}
	svgs := find(seed, "svg", "seq")
	if len(svgs) != 1 {
		t.Fatalf("%d sequence diagrams in seed 000's section, want 1", len(svgs))
	}
	svg := svgs[0]
	var names []string
	for _, n := range find(svg, "text", "lifename") {
		names = append(names, text(n))
	}
	if d := slices.Compare([]string{"app / client", "target", "model upstream", "ledger"}, names); d != 0 {
		t.Errorf("lifelines %q", names)
	}
	var texts []string
	for _, n := range find(svg, "text", "") {
		texts = append(texts, text(n))
	}
	all := strings.Join(texts, "\n")
	count := func(prefix string) int { return countWhere(texts, strings.HasPrefix, prefix) }
	for _, tt := range []struct {
		prefix string
		want   int
	}{
		{"REPLAY #2 · first ran at +", 1},
		{"REPLAY #3 · first ran at +", 1},
		{"FAULT: follow_up respond 500 always", 3},
		{"attempt 2 · POST /v1/responses initial", 1},
		{"attempt 3 · POST /v1/responses follow-up", 1},
		{"translated: the app sent Anthropic Messages", 1},
		{"POST /v1/messages", 1},
		{"HTTP 500", 1},
		{"body: {", 1},
	} {
		if got := count(tt.prefix); got != tt.want {
			t.Errorf("%d texts start %q, want %d:\n%s", got, tt.prefix, tt.want, all)
		}
	}
	var seps []string
	for _, n := range find(svg, "text", "septext") {
		seps = append(seps, text(n))
	}
	if slices.Compare([]string{"attempt 2", "attempt 3"}, seps) != 0 {
		t.Errorf("attempts ruled off: %q, want attempt 2 and attempt 3", seps)
	}
	for _, tt := range []struct {
		tag, class string
		want       int
	}{
		{"rect", "lifebox", 4},
		{"line", "life", 4},
		{"line", "arrow", len(Explain(naiveResult(t, "seed messages fault_on").History)) - 3}, // the writes are notes
		{"line", "replay", 2},
		{"rect", "band", 2 + 3},
		{"circle", "bolt", 3},
		{"polygon", "fault", 3},
		{"rect", "replay", 2 + 2}, // the replays' bands and their writes
		{"line", "sep", 2},
	} {
		if got := len(find(svg, tt.tag, tt.class)); got != tt.want {
			t.Errorf("%d <%s class=%s>, want %d", got, tt.tag, tt.class, tt.want)
		}
	}
	pres := find(seed, "pre", "")
	if len(pres) == 0 || !strings.Contains(text(pres[0]), "injected follow-up failure") {
		t.Error("seed 000's section does not show the app's answer")
	}
	if !strings.Contains(text(doc), "What the app got") {
		t.Error("no heading over the app's answer")
	}
}

// Names and bodies are text, never markup: a scenario name or a body that
// holds HTML or escape sequences is shown as written, and adds no element.
func TestHTMLEscapes(t *testing.T) {
	h := seedRun("builtin:naive", 2)
	h.Scenario = "<script>alert(1)</script> \x1b[31mred\u202e"
	h.Target = `"><img src=x onerror=alert(2)>`
	h.Requests[0].Body = "</pre><img src=x onerror=alert(3)><svg onload=alert(4)>"
	doc, raw := parseHTML(t, Suite{Results: []rules.Result{rules.Evaluate(h)}}, HTMLOptions{})
	if n := find(doc, "script", ""); len(n) > 0 {
		t.Errorf("%d <script>", len(n))
	}
	if n := find(doc, "img", ""); len(n) > 0 {
		t.Errorf("%d <img>", len(n))
	}
	for _, n := range find(doc, "", "") {
		for _, a := range n.Attr {
			if strings.HasPrefix(a.Key, "on") {
				t.Errorf("<%s %s>", n.Data, a.Key)
			}
		}
	}
	if strings.ContainsAny(raw, "\x1b\u202e") {
		t.Error("control characters reach the page")
	}
	body := text(doc)
	for _, want := range []string{`<script>alert(1)</script> \x1b[31mred\u202e`, `"><img src=x onerror=alert(2)>`, "</pre><img src=x onerror=alert(3)>"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page's text lacks %q", want)
		}
	}
}

// A large suite stays usable: diagrams for the first results only (the
// failure among them), the passes collapsed, and the rest counted.
func TestHTMLLargeSuite(t *testing.T) {
	doc, raw := parseHTML(t, bigSuite(1000), HTMLOptions{MaxDiagrams: 50})
	if n := len(find(doc, "svg", "seq")); n != 50 {
		t.Errorf("%d diagrams, want 50", n)
	}
	secs := find(doc, "details", "result")
	if len(secs) != 1001 {
		t.Fatalf("%d sections, want 1001", len(secs))
	}
	if len(find(secs[0], "svg", "seq")) != 1 || !strings.Contains(text(secs[0]), "chat follow-up 500 after tool ran") {
		t.Error("the failure is not first with its diagram")
	}
	open := 0
	for _, s := range secs {
		if _, ok := attr(s, "open"); ok {
			open++
		}
	}
	if open != 1 {
		t.Errorf("%d sections open, want only the failure's", open)
	}
	if !strings.Contains(text(doc), "951 more results are listed without a diagram") {
		t.Error("the results without a diagram are not counted")
	}
	if len(raw) > 4<<20 {
		t.Errorf("%d bytes for 1001 results", len(raw))
	}
}
