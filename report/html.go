package report

import (
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/replaycheck/replaycheck/internal/harness/baseline"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// HTMLOptions tune WriteHTMLWith. The zero value draws up to
// DefaultMaxDiagrams diagrams.
type HTMLOptions struct {
	// MaxDiagrams caps the sequence diagrams drawn, failures first; the
	// results past it are listed with their checks only. 0 means
	// DefaultMaxDiagrams.
	MaxDiagrams int
	// Draw, when set, picks the results (by index) drawn as diagrams in
	// place of MaxDiagrams (the matrix draws its findings').
	Draw func(i int) bool
	// Preface is text shown as written above the results, for example an
	// explore sweep's findings (ExploreFindingsText); "" shows none.
	Preface string
	// Title, when set, replaces the page's title (a page that is not a
	// run's: the matrix).
	Title string
	// Lead is HTML shown above the results, already escaped (the matrix's
	// grid, whose cells link to the results); "" shows none.
	Lead template.HTML
}

// DefaultMaxDiagrams is how many sequence diagrams an HTML report draws
// by default: enough for every failure of a large suite, small enough that
// a browser opens the file at once.
const DefaultMaxDiagrams = 300

// htmlBodyCap caps the excerpt of the app's answer an HTML report shows.
const htmlBodyCap = 2048

// WriteHTML writes a self-contained HTML report (inline CSS and SVG, no
// script, nothing fetched): see WriteHTMLWith.
func WriteHTML(w io.Writer, s Suite) error { return WriteHTMLWith(w, s, HTMLOptions{}) }

// WriteHTMLWith writes a self-contained HTML report: the total, why the run
// did not complete (when it did not), a summary table with the failures
// first, and for each result its checks and its timeline drawn as a
// sequence diagram of the app, the target, the model upstream and the
// ledger (see Explain), with the injected faults and the replays marked.
// Results that pass are collapsed. Every name and body is escaped.
func WriteHTMLWith(w io.Writer, s Suite, opts HTMLOptions) error {
	return scrubbed(w, "HTML report", func(w io.Writer) error { return writeHTMLWith(w, s, opts) })
}

// writeHTMLWith is WriteHTMLWith before scrubbing.
func writeHTMLWith(w io.Writer, s Suite, opts HTMLOptions) error {
	limit := opts.MaxDiagrams
	if limit <= 0 {
		limit = DefaultMaxDiagrams
	}
	p := htmlPage{Total: TotalLine(s), Abort: AbortLines(s), Baseline: BaselineLines(s), Notes: slices.Concat(NoteLines(s), SkipLines(s)), Preface: opts.Preface, Lead: opts.Lead}
	t := s.Totals()
	switch {
	case s.Abort != nil:
		p.Mark, p.Title = "abort", "replaycheck: "+abortTitle(s.Abort.Kind)
	case s.Baseline != nil && s.Baseline.Broken() || s.Baseline == nil && t.Fail > 0:
		p.Mark, p.Title = "fail", "replaycheck: rules broken"
	case s.Baseline == nil && t.Unknown > 0:
		p.Mark, p.Title = "unknown", "replaycheck: checks could not judge"
	default:
		p.Mark, p.Title = "pass", "replaycheck: every rule held"
	}
	if opts.Title != "" {
		p.Title = opts.Title
	}
	if r := s.Run; r != nil {
		for _, kv := range [][2]string{{"replaycheck", r.Replaycheck}, {"seed", r.Seed}, {"shard", r.Shard}} {
			if kv[1] != "" {
				p.Info = append(p.Info, kv[0]+" "+kv[1])
			}
		}
	}
	for k, n := range failuresFirst(s) {
		r := s.Results[n]
		bv := baselineOf(s, n)
		id := "r" + strconv.Itoa(n+1)
		verdict, class := string(r.Verdict), string(r.Verdict)
		if bv != nil && bv.Status == baseline.Known {
			verdict, class = knownLabel, "known"
		}
		c := r.Counts
		p.Rows = append(p.Rows, htmlRow{ID: id, Scenario: TerminalText(r.History.Scenario), Target: TerminalText(r.History.Target),
			Verdict: verdict, Class: class, Status: statuses(r), Runs: runsCell(r), Writes: c.Writes, Initial: c.Initial,
			FollowUp: c.FollowUp, MCPCalls: wire.CallsText(c.MCPCalls, c.Unknown), Protocol: wire.MCPProtocolsText(c.Protocols), Failed: failedChecks(r)})
		sec := htmlSection{ID: id, Row: p.Rows[len(p.Rows)-1], Open: r.Verdict != rules.Pass && r.Verdict != rules.Skipped && class != "known",
			File: TerminalText(r.History.File), Token: r.History.Token, Run: shownRun(r), Duration: round(r.History.Duration.D())}
		for _, v := range r.Verdicts {
			if v.Status == rules.Pass && r.Verdict != rules.Pass {
				continue
			}
			note := ""
			if v.Status != rules.Pass && known(bv, v.Check) {
				note = "in the baseline"
			}
			sec.Checks = append(sec.Checks, htmlCheck{Status: string(v.Status), Check: v.Check, Message: TerminalText(v.Message), Note: note})
		}
		if opts.Draw != nil && opts.Draw(n) || opts.Draw == nil && k < limit {
			steps := Explain(r.History)
			d := drawSequence(r.History, steps)
			sec.Diagram = &d
			sec.Answers = appAnswers(steps, len(r.History.Requests) > 1)
		} else if opts.Draw == nil {
			p.Undrawn++ // past the cap, which the page says
		}
		sec.Faults = faultLines(r.History)
		for _, l := range r.History.TargetOutput {
			sec.Output = append(sec.Output, outputText(l))
		}
		p.Sections = append(p.Sections, sec)
	}
	p.Repeated, p.HasBaseline, p.Negotiated = repeated(s), s.Baseline != nil, negotiatedAny(s)
	if p.HasBaseline {
		for i := range p.Rows {
			p.Rows[i].Baseline = baselineCell(baselineOf(s, rowIndex(p.Rows[i].ID)))
		}
	}
	if err := htmlTemplate().Execute(w, p); err != nil {
		return fmt.Errorf("writing HTML report: %w", err)
	}
	return nil
}

// rowIndex returns the result index of a row id ("r3" is result 2).
func rowIndex(id string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(id, "r"))
	return n - 1
}

// appAnswers returns the answers the app got, with their bodies capped;
// many says the run made several requests, so each answer names its own.
func appAnswers(steps []Step, many bool) []htmlAnswer {
	var out []htmlAnswer
	for _, st := range steps {
		if st.Kind != StepAnswer {
			continue
		}
		a := htmlAnswer{At: "+" + round(st.At), Label: st.Label, Failed: st.Failed, Body: terminalLines(st.Body)}
		if many {
			a.Request = st.Request
		}
		if r := []rune(a.Body); len(r) > htmlBodyCap {
			a.Body, a.Cut = string(r[:htmlBodyCap]), len(r)-htmlBodyCap
		}
		out = append(out, a)
	}
	return out
}

// terminalLines is TerminalText line by line: line breaks are kept,
// other control characters escaped.
func terminalLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = TerminalText(strings.TrimSuffix(l, "\r"))
	}
	return strings.Join(lines, "\n")
}

// faultLines renders what became of each armed fault.
func faultLines(h *history.History) []string {
	var out []string
	for _, f := range h.Faults {
		what := f.Side + " fault " + strconv.Itoa(f.Index)
		if f.Method != "" {
			what += " (" + f.Method + ")"
		}
		out = append(out, fmt.Sprintf("%s %s: matched %d, fired %d", what, TerminalText(string(f.Fault)), f.Matched, f.Fired))
	}
	return out
}

type htmlPage struct {
	Title, Mark, Total    string
	Info, Abort, Baseline []string
	Notes                 []string
	Preface               string
	Lead                  template.HTML
	Rows                  []htmlRow
	Sections              []htmlSection
	Undrawn               int
	Repeated, HasBaseline bool
	// Negotiated shows the MCP protocol column (negotiatedAny).
	Negotiated bool
}

type htmlRow struct {
	ID, Scenario, Target, Verdict, Class, Status, Runs, Failed, Baseline string
	Writes, Initial, FollowUp                                            int
	MCPCalls                                                             string
	// Protocol is the MCP protocol versions the run negotiated
	// (wire.MCPProtocolsText).
	Protocol string
}

type htmlSection struct {
	ID               string
	Row              htmlRow
	Open             bool
	File, Token, Run string
	Duration         string
	Checks           []htmlCheck
	Diagram          *svgDiagram
	Answers          []htmlAnswer
	Faults, Output   []string
}

type htmlCheck struct{ Status, Check, Message, Note string }

type htmlAnswer struct {
	// Request is the app's request the answer is to; 0 when the run made
	// only one.
	Request   int
	At, Label string
	Failed    bool
	Body      string
	Cut       int
}

// htmlTemplate is parsed on first use, not at start-up: every command
// would pay for it.
var htmlTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Parse(htmlSource))
})

const htmlSource = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
:root { --fg:#1d2430; --muted:#5f6b7a; --line:#d5dbe3; --pass:#1a7f37; --fail:#c62828; --unknown:#8a6d00; --fault:#e65100; --known:#6b5fa8; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px 32px 48px; font: 14px/1.45 "Liberation Sans", Arial, Helvetica, sans-serif; color: var(--fg); background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; }
h1 .mark { display: inline-block; width: 14px; height: 14px; border-radius: 50%; margin-right: 8px; vertical-align: 1px; }
h1 .mark.pass { background: var(--pass); } h1 .mark.fail { background: var(--fail); } h1 .mark.unknown { background: var(--unknown); } h1 .mark.abort { background: var(--fault); }
.total { font-size: 15px; margin: 0 0 4px; }
.info { color: var(--muted); margin: 0 0 16px; }
.banner { border-left: 4px solid var(--fault); background: #fff3e0; padding: 8px 12px; margin: 0 0 16px; }
.banner p { margin: 2px 0; }
.notes { color: var(--muted); margin: 0 0 16px; padding-left: 18px; }
table.summary { border-collapse: collapse; margin: 0 0 24px; width: 100%; }
table.summary th, table.summary td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
table.summary th { background: #f4f6f9; font-weight: 600; white-space: nowrap; }
table.summary td.n { text-align: right; font-variant-numeric: tabular-nums; }
table.summary td.name { word-break: break-word; }
.verdict { display: inline-block; padding: 0 7px; border-radius: 9px; font-size: 12px; font-weight: 700; color: #fff; text-transform: uppercase; white-space: nowrap; }
.verdict.pass { background: var(--pass); } .verdict.fail { background: var(--fail); } .verdict.unknown { background: var(--unknown); } .verdict.known, .verdict.skipped { background: var(--known); }
details.result { border: 1px solid var(--line); border-radius: 6px; margin: 0 0 14px; }
details.result > summary { cursor: pointer; padding: 8px 12px; font-size: 15px; font-weight: 600; background: #f8f9fb; border-radius: 6px; }
details.result[open] > summary { border-bottom: 1px solid var(--line); border-radius: 6px 6px 0 0; }
details.result > summary .meta { font-weight: 400; color: var(--muted); font-size: 13px; }
.inner { padding: 8px 14px 12px; }
ul.checks { margin: 4px 0 10px; padding-left: 0; list-style: none; }
ul.checks li { margin: 2px 0; }
ul.checks .st { display: inline-block; min-width: 58px; font-weight: 700; font-size: 12px; }
ul.checks .st.fail { color: var(--fail); } ul.checks .st.unknown { color: var(--unknown); } ul.checks .st.skipped { color: var(--known); } ul.checks .st.pass { color: var(--pass); }
ul.checks code { font-size: 13px; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 18px; align-items: center; margin: 0 0 18px; padding: 8px 12px; background: #f8f9fb; border: 1px solid var(--line); border-radius: 6px; font-size: 13px; }
.legend svg { vertical-align: middle; margin-right: 4px; }
svg.seq { display: block; max-width: 100%; height: auto; margin: 6px 0 10px; font-family: "Liberation Sans", Arial, Helvetica, sans-serif; }
svg .lifebox { fill: #eef3fb; stroke: #4a6fa5; }
svg .lifename { font-size: 14px; font-weight: 700; fill: #1d2430; }
svg .lifesub { font-size: 11px; fill: var(--muted); }
svg .life { stroke: #b7c0cc; stroke-width: 1.5; stroke-dasharray: 4 4; }
svg .time { font-size: 11px; fill: var(--muted); font-variant-numeric: tabular-nums; }
svg .lbl { font-size: 12px; fill: #1d2430; }
svg .lbl.replay { fill: var(--fail); font-weight: 700; }
svg .lbl.fault { fill: var(--fault); font-weight: 700; }
svg .lbl.failed { fill: var(--fail); }
svg .lbl.session, svg .lbl.ledger { fill: var(--muted); }
svg .note { font-size: 11.5px; font-style: italic; fill: #7a5d00; }
svg .arrow { stroke: #1d2430; stroke-width: 1.4; fill: none; }
svg .arrow.answer { stroke-dasharray: 6 4; }
svg .arrow.session, svg .arrow.ledger { stroke: #8a96a6; }
svg .arrow.replay { stroke: var(--fail); stroke-width: 3; }
svg .arrow.fault { stroke: var(--fault); stroke-width: 2.4; }
svg .arrow.failed { stroke: var(--fail); }
svg .head { fill: #1d2430; } svg .head.session, svg .head.ledger { fill: #8a96a6; } svg .head.replay, svg .head.failed { fill: var(--fail); } svg .head.fault { fill: var(--fault); }
svg .band.replay { fill: #fdecea; } svg .band.fault { fill: #fff1e0; }
svg .box { fill: #fffbe6; stroke: #d9c77a; }
svg .box.fault { fill: #fff1e0; stroke: var(--fault); }
svg .boxtext { font-size: 11.5px; fill: #4a4020; }
svg .boxtext.fault { fill: var(--fault); font-weight: 700; }
svg .box.replay { fill: #fdecea; stroke: var(--fail); stroke-width: 1.5; }
svg .boxtext.replay { fill: var(--fail); font-weight: 700; }
svg .sep { stroke: #9aa5b4; stroke-dasharray: 2 3; }
svg .septext { font-size: 11px; fill: #4a6fa5; font-weight: 700; }
svg .bolt { fill: var(--fault); }
svg .bolttext { fill: #fff; font-size: 11px; font-weight: 700; }
.answer h4, .faults h4, .output h4 { margin: 10px 0 4px; font-size: 13px; }
pre { margin: 0; padding: 8px 10px; background: #f6f8fa; border: 1px solid var(--line); border-radius: 4px; font: 12px/1.4 "Liberation Mono", Menlo, Consolas, monospace; white-space: pre-wrap; word-break: break-all; max-height: 320px; overflow: auto; }
pre.preface { max-height: none; margin: 12px 0; word-break: normal; }
.cut { color: var(--muted); font-size: 12px; }
footer { color: var(--muted); font-size: 12px; margin-top: 28px; }
</style>
</head>
<body>
<h1><span class="mark {{.Mark}}"></span>{{.Title}}</h1>
<p class="total">{{.Total}}</p>
{{with .Info}}<p class="info">{{range $i, $v := .}}{{if $i}} · {{end}}{{$v}}{{end}}</p>{{end}}
{{with .Abort}}<div class="banner">{{range .}}<p>{{.}}</p>{{end}}</div>{{end}}
{{with .Baseline}}<div class="banner">{{range .}}<p>{{.}}</p>{{end}}</div>{{end}}
{{with .Notes}}<ul class="notes">{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{with .Preface}}<pre class="preface">{{.}}</pre>{{end}}
{{with .Lead}}{{.}}{{end}}
{{if .Rows}}<table class="summary">
<thead><tr><th>Scenario</th><th>Target</th><th>Verdict</th>{{if .Repeated}}<th>Runs</th>{{end}}<th>Status</th><th>Writes</th><th>Initial</th><th>Follow-up</th><th>MCP calls</th>{{if .Negotiated}}<th>MCP protocol</th>{{end}}<th>Failed checks</th>{{if .HasBaseline}}<th>Baseline</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr><td class="name"><a href="#{{.ID}}">{{.Scenario}}</a></td><td>{{.Target}}</td><td><span class="verdict {{.Class}}">{{.Verdict}}</span></td>{{if $.Repeated}}<td>{{.Runs}}</td>{{end}}<td>{{.Status}}</td><td class="n">{{.Writes}}</td><td class="n">{{.Initial}}</td><td class="n">{{.FollowUp}}</td><td class="n">{{.MCPCalls}}</td>{{if $.Negotiated}}<td>{{.Protocol}}</td>{{end}}<td>{{.Failed}}</td>{{if $.HasBaseline}}<td>{{.Baseline}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
<div class="legend">
<span><svg width="46" height="12"><line x1="2" y1="6" x2="36" y2="6" class="arrow"/><polygon points="44,6 35,1.5 35,10.5" class="head"/></svg>request</span>
<span><svg width="46" height="12"><line x1="2" y1="6" x2="36" y2="6" class="arrow answer"/><polygon points="44,6 35,1.5 35,10.5" class="head"/></svg>answer</span>
<span><svg width="46" height="14"><rect x="0" y="0" width="46" height="14" class="band replay"/><line x1="2" y1="7" x2="36" y2="7" class="arrow replay"/><polygon points="44,7 35,2.5 35,11.5" class="head replay"/></svg>replay: the same tool call executed again</span>
<span><svg width="46" height="18"><rect x="0" y="0" width="46" height="18" class="band fault"/><circle cx="9" cy="9" r="8" class="bolt"/><text x="9" y="13" text-anchor="middle" class="bolttext">!</text><line x1="18" y1="9" x2="36" y2="9" class="arrow answer fault"/><polygon points="44,9 35,4.5 35,13.5" class="head fault"/></svg>injected fault, where it hit</span>
<span><svg width="46" height="12"><line x1="2" y1="6" x2="36" y2="6" class="arrow answer failed"/><polygon points="44,6 35,1.5 35,10.5" class="head failed"/></svg>error answer</span>
<span><svg width="46" height="12"><line x1="0" y1="6" x2="46" y2="6" class="sep"/></svg>a new attempt at the tool loop</span>
</div>{{end}}
{{if .Undrawn}}<p class="cut">{{.Undrawn}} more results are listed without a diagram (the report draws at most the first results, failures first); the JSON report holds every history.</p>{{end}}
{{range .Sections}}<details class="result" id="{{.ID}}"{{if .Open}} open{{end}}>
<summary><span class="verdict {{.Row.Class}}">{{.Row.Verdict}}</span> {{.Row.Scenario}} <span class="meta">on {{.Row.Target}}{{with .File}} · {{.}}{{end}} · token {{.Token}}{{with .Run}} · {{.}}{{end}} · {{.Duration}}</span></summary>
<div class="inner">
<ul class="checks">{{range .Checks}}<li><span class="st {{.Status}}">{{.Status}}</span> <code>{{.Check}}</code>: {{.Message}}{{with .Note}} <em>({{.}})</em>{{end}}</li>{{end}}</ul>
{{with .Diagram}}<svg class="seq" xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}" role="img" aria-label="sequence diagram">
{{range .Rects}}<rect x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}" rx="{{.R}}" class="{{.Class}}"/>
{{end}}{{range .Lines}}<line x1="{{.X1}}" y1="{{.Y1}}" x2="{{.X2}}" y2="{{.Y2}}" class="{{.Class}}"/>
{{end}}{{range .Polys}}<polygon points="{{.Points}}" class="{{.Class}}"/>
{{end}}{{range .Circles}}<circle cx="{{.X}}" cy="{{.Y}}" r="{{.R}}" class="{{.Class}}"/>
{{end}}{{range .Texts}}<text x="{{.X}}" y="{{.Y}}" text-anchor="{{.Anchor}}" class="{{.Class}}">{{.Text}}</text>
{{end}}</svg>{{end}}
{{range .Answers}}<div class="answer"><h4>What the app got{{if gt .Request 0}} (request {{.Request}}){{end}} at {{.At}}: {{.Label}}</h4>{{if .Body}}<pre>{{.Body}}</pre>{{if .Cut}}<p class="cut">… {{.Cut}} more characters in the JSON report</p>{{end}}{{end}}</div>{{end}}
{{with .Faults}}<div class="faults"><h4>Armed faults</h4><pre>{{range .}}{{.}}
{{end}}</pre></div>{{end}}
{{with .Output}}<div class="output"><h4>Target output (last lines)</h4><pre>{{range .}}{{.}}
{{end}}</pre></div>{{end}}
</div>
</details>
{{end}}<footer>Written by replaycheck. Self-contained: no scripts, nothing fetched.</footer>
</body>
</html>
`
