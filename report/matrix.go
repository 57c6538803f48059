package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/replaycheck/replaycheck/internal/harness/explore"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/matrix"
)

// WriteMatrixJSON writes m as indented JSON, the format matrix.Read reads.
func WriteMatrixJSON(w io.Writer, m *matrix.Matrix) error {
	return scrubbed(w, "matrix JSON", func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(m); err != nil {
			return fmt.Errorf("writing matrix JSON: %w", err)
		}
		return nil
	})
}

// MatrixTotalLine renders the matrix's one-line total, for example "2
// agents × 28 mechanisms: 9 DUPLICATE, 0 LOST, 0 reported as failure, 3
// unknown, 44 safe in 1m52s".
func MatrixTotalLine(m *matrix.Matrix) string {
	counts := map[matrix.Verdict]int{}
	for _, r := range m.Rows {
		for _, c := range r.Cells {
			counts[c.Verdict]++
		}
	}
	parts := make([]string, 0, len(matrixVerdicts()))
	for _, v := range matrixVerdicts() {
		parts = append(parts, fmt.Sprintf("%d %s", counts[v], v))
	}
	line := fmt.Sprintf("%s × %s: %s in %s", countOf(len(m.Rows), "agent"), countOf(len(matrixColumns(m)), "mechanism"), strings.Join(parts, ", "), round(m.Wall.D()))
	if m.Shard != "" {
		line += " (shard " + m.Shard + ")"
	}
	return line
}

// matrixVerdicts lists the verdicts, worst first.
func matrixVerdicts() []matrix.Verdict {
	return []matrix.Verdict{matrix.Duplicate, matrix.Lost, matrix.ReportedFailure, matrix.Hung, matrix.Unknown, matrix.Safe}
}

// matrixColumn is one mechanism of the matrix's grid.
type matrixColumn struct{ Family, Mechanism, Doc string }

// matrixColumns are the mechanisms any row has a cell of, in family order,
// then in the order of explore's table of fault kinds, then (the client
// scenarios) in the order the rows have them.
func matrixColumns(m *matrix.Matrix) []matrixColumn {
	var out []matrixColumn
	add := func(c matrix.Cell) {
		if !slices.ContainsFunc(out, func(x matrixColumn) bool { return x.Mechanism == c.Mechanism }) {
			out = append(out, matrixColumn{Family: c.Family, Mechanism: c.Mechanism, Doc: c.Doc})
		}
	}
	for _, fam := range matrix.Families() {
		for _, k := range explore.Kinds() {
			for _, r := range m.Rows {
				if c, ok := r.Cell(k.Name); ok && c.Family == fam {
					add(c)
				}
			}
		}
		for _, r := range m.Rows {
			for _, c := range r.Cells {
				if c.Family == fam {
					add(c)
				}
			}
		}
	}
	return out
}

// agentLabel names a row's agent with its version.
func agentLabel(r matrix.Row) string {
	if r.Version == "" {
		return r.Target
	}
	return r.Target + " " + r.Version
}

// familySummary sums up a row's cells of one family: each verdict but safe
// with its mechanisms, then the count of safe ones; "as ROW" for a model
// family swept on another row (matrix.Row.ModelRow); "—" when it has none.
func familySummary(r matrix.Row, family string, bold func(string) string) string {
	var parts []string
	for _, v := range matrixVerdicts() {
		var names []string
		for _, c := range r.Cells {
			if c.Family == family && c.Verdict == v {
				names = append(names, c.Mechanism)
			}
		}
		switch {
		case len(names) == 0:
		case v == matrix.Safe:
			parts = append(parts, fmt.Sprintf("safe %d", len(names)))
		case v == matrix.Duplicate || v == matrix.Lost:
			parts = append(parts, bold(string(v))+" "+strings.Join(names, ", "))
		default:
			parts = append(parts, string(v)+" "+strings.Join(names, ", "))
		}
	}
	if len(parts) == 0 {
		if r.ModelRow != "" && (family == matrix.FamilyStatus || family == matrix.FamilyStream) {
			return "as " + r.ModelRow
		}
		return "—"
	}
	return strings.Join(parts, " · ")
}

// WriteMatrixTable writes the matrix for a terminal: the total, then per
// agent each family's summary, its cells that are not safe with their
// reproductions, and what was not swept.
func WriteMatrixTable(w io.Writer, m *matrix.Matrix) error {
	var b strings.Builder
	for _, r := range m.Rows {
		fmt.Fprintf(&b, "%s (%s, %s)\n", TerminalText(agentLabel(r)), countOf(r.Runs, "run"), round(r.Wall.D()))
		if r.Error != "" {
			fmt.Fprintf(&b, "  not swept: %s\n", TerminalText(r.Error))
			continue
		}
		for _, fam := range matrix.Families() {
			if s := familySummary(r, fam, func(s string) string { return s }); s != "—" {
				fmt.Fprintf(&b, "  %-22s %s\n", fam, TerminalText(s))
			}
		}
		for _, c := range r.Cells {
			if c.Verdict == matrix.Safe {
				continue
			}
			fmt.Fprintf(&b, "  %s %s: %s\n", c.Verdict, c.Mechanism, TerminalText(c.Reason))
			if c.Reproduction != "" {
				fmt.Fprintf(&b, "    reproduction: %s\n", TerminalText(c.Reproduction))
			}
		}
		if len(r.Pruned) > 0 {
			fmt.Fprintf(&b, "  not swept: %s\n", TerminalText(prunedText(r.Pruned)))
		}
		if len(r.PrunedRuns) > 0 {
			fmt.Fprintf(&b, "  runs not made: %s\n", TerminalText(prunedRunsText(r.PrunedRuns)))
		}
	}
	b.WriteString(MatrixTotalLine(m) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// prunedRunsText lists the runs not made, grouped by reason: "drop,
// error-event (24 runs: on every attempt of …)".
func prunedRunsText(ps []matrix.PrunedRuns) string {
	var reasons []string
	by, runs := map[string][]string{}, map[string]int{}
	for _, p := range ps {
		if _, ok := by[p.Reason]; !ok {
			reasons = append(reasons, p.Reason)
		}
		by[p.Reason] = append(by[p.Reason], p.Mechanism)
		runs[p.Reason] += p.Runs
	}
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("%s (%s: %s)", strings.Join(by[r], ", "), countOf(runs[r], "run"), r)
	}
	return strings.Join(parts, "; ")
}

// prunedText lists the mechanisms not swept, grouped by reason.
func prunedText(ps []matrix.Pruned) string {
	var reasons []string
	by := map[string][]string{}
	for _, p := range ps {
		if _, ok := by[p.Reason]; !ok {
			reasons = append(reasons, p.Reason)
		}
		by[p.Reason] = append(by[p.Reason], p.Mechanism)
	}
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = strings.Join(by[r], ", ") + " (" + r + ")"
	}
	return strings.Join(parts, "; ")
}

// WriteMatrixMarkdown writes the matrix as Markdown, for a README or a CI
// step summary: the total, one line per agent with each family's summary,
// then per agent its cells that are not safe (counts, what it told the
// model and the user, reproduction) and what was not swept.
func WriteMatrixMarkdown(w io.Writer, m *matrix.Matrix) error {
	return scrubbed(w, "matrix Markdown", func(w io.Writer) error {
		var b strings.Builder
		b.WriteString("## Replay-safety matrix\n\n")
		b.WriteString(mdEscape(MatrixTotalLine(m)) + "\n\n")
		b.WriteString("| Agent | Version |")
		for _, fam := range matrix.Families() {
			b.WriteString(" " + fam + " |")
		}
		b.WriteString("\n|---|---|" + strings.Repeat("---|", len(matrix.Families())) + "\n")
		for _, r := range m.Rows {
			b.WriteString(MatrixMarkdownRow(r) + "\n")
		}
		for _, r := range m.Rows {
			fmt.Fprintf(&b, "\n### %s\n\n", mdEscape(agentLabel(r)))
			if r.Error != "" {
				fmt.Fprintf(&b, "Not swept: %s\n", mdEscape(r.Error))
				continue
			}
			var bad []matrix.Cell
			for _, c := range r.Cells {
				if c.Verdict != matrix.Safe {
					bad = append(bad, c)
				}
			}
			if len(bad) > 0 {
				b.WriteString("| Mechanism | Verdict | Writes / calls | Why | Told the model | Told the user | Reproduction |\n|---|---|---|---|---|---|---|\n")
				for _, c := range bad {
					fmt.Fprintf(&b, "| %s | %s | %d / %d | %s | %s | %s | %s |\n", mdEscape(c.Mechanism), c.Verdict, c.Writes, c.LogicalCalls,
						mdEscape(c.Reason), mdEscape(c.ToldModel), mdEscape(c.ToldUser), mdCode(c.Reproduction))
				}
				b.WriteString("\n")
			}
			var safe []string
			for _, c := range r.Cells {
				if c.Verdict == matrix.Safe {
					safe = append(safe, c.Mechanism)
				}
			}
			if len(safe) > 0 {
				fmt.Fprintf(&b, "Safe: %s.\n\n", mdEscape(strings.Join(safe, ", ")))
			}
			if len(r.Pruned) > 0 {
				fmt.Fprintf(&b, "Not swept: %s.\n\n", mdEscape(prunedText(r.Pruned)))
			}
			if len(r.PrunedRuns) > 0 {
				fmt.Fprintf(&b, "Runs not made: %s.\n\n", mdEscape(prunedRunsText(r.PrunedRuns)))
			}
			fmt.Fprintf(&b, "%s in %s.\n", countOf(r.Runs, "run"), round(r.Wall.D()))
		}
		_, err := io.WriteString(w, b.String())
		return err
	})
}

// MatrixMarkdownRow is an agent's line of the Markdown matrix: its name,
// its version and each family's summary. It holds verdicts only (no
// timings), so the same matrix renders it the same.
func MatrixMarkdownRow(r matrix.Row) string {
	version := r.Version
	if version == "" {
		version = "—"
	}
	line := "| " + mdEscape(r.Target) + " | " + mdEscape(version) + " |"
	for _, fam := range matrix.Families() {
		s := "not swept"
		if r.Error == "" {
			s = familySummary(r, fam, func(s string) string { return "**" + s + "**" })
		}
		line += " " + mdEscape(s) + " |"
	}
	return line
}

// mdCode renders a path as inline code; "" as "—".
func mdCode(s string) string {
	if s == "" {
		return "—"
	}
	return "`" + strings.ReplaceAll(mdEscape(s), "`", "'") + "`"
}

// WriteMatrixDiff writes what changed between the matrix saved in oldName
// and this one: each cell that turned DUPLICATE or LOST first, then the
// others; "no cell changed" when none did.
func WriteMatrixDiff(w io.Writer, oldName string, changes []matrix.Change) error {
	var b strings.Builder
	if len(changes) == 0 {
		fmt.Fprintf(&b, "matrix diff against %s: no cell changed\n", TerminalText(oldName))
	} else {
		fmt.Fprintf(&b, "matrix diff against %s: %s changed\n", TerminalText(oldName), countOf(len(changes), "cell"))
	}
	ordered := slices.Clone(changes)
	slices.SortStableFunc(ordered, func(x, y matrix.Change) int { return boolRank(x.Worse()) - boolRank(y.Worse()) })
	for _, c := range ordered {
		mark := "  "
		if c.Worse() {
			mark = "! "
		}
		versions := ""
		if c.OldVersion != c.NewVersion {
			versions = fmt.Sprintf(" (%s → %s)", orNone(c.OldVersion), orNone(c.NewVersion))
		}
		fmt.Fprintf(&b, "%s%s · %s: %s → %s%s\n", mark, TerminalText(c.Target), TerminalText(c.Mechanism), orNone(string(c.Old)), orNone(string(c.New)), TerminalText(versions))
		if c.Worse() && c.Reproduction != "" {
			fmt.Fprintf(&b, "    reproduction: %s\n", TerminalText(c.Reproduction))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// orNone is s, or "none" for "".
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// WriteMatrixHTML writes the matrix as a self-contained HTML page: a grid
// of agents (with their versions) by mechanisms grouped by family, each
// cell that is not safe linking to its worst run below, shown as the run
// report shows a result (WriteHTMLWith), drawn as a diagram where the cell
// is a finding (not unknown).
func WriteMatrixHTML(w io.Writer, m *matrix.Matrix) error {
	cols := matrixColumns(m)
	g := matrixGrid{Total: MatrixTotalLine(m)}
	for _, fam := range matrix.Families() {
		n := 0
		for _, c := range cols {
			if c.Family == fam {
				n++
			}
		}
		if n > 0 {
			g.Families = append(g.Families, gridFamily{Name: fam, Span: n})
		}
	}
	g.Columns = cols
	var s Suite
	var drawn []bool // a finding's run is drawn as a diagram; an unknown's is listed
	for _, r := range m.Rows {
		gr := gridRow{Agent: r.Target, Version: r.Version, Error: r.Error, Pruned: prunedText(r.Pruned)}
		for _, col := range cols {
			c, ok := r.Cell(col.Mechanism)
			if !ok {
				gr.Cells = append(gr.Cells, gridCell{Label: "—", Class: "none", Title: prunedReason(r.Pruned, col.Mechanism)})
				continue
			}
			gc := gridCell{Label: cellLabel(c.Verdict), Class: cellClass(c.Verdict), Title: string(c.Verdict) + ": " + TerminalText(c.Reason)}
			if c.Reproduction != "" {
				gc.Title += " · reproduction: " + TerminalText(c.Reproduction)
			}
			// A safe cell's run stays in the JSON: the page shows the
			// runs that say something, and draws the findings', so it
			// stays small as rows grow.
			if c.Verdict != matrix.Safe && c.Result != nil && c.Result.History != nil {
				res := *c.Result
				h := *res.History
				h.Scenario = c.Mechanism + " (" + string(c.Verdict) + ") — " + h.Scenario
				res.History = &h
				s.Results = append(s.Results, res)
				drawn = append(drawn, c.Verdict != matrix.Unknown)
				gc.Link = "#r" + strconv.Itoa(len(s.Results))
			}
			gr.Cells = append(gr.Cells, gc)
		}
		g.Rows = append(g.Rows, gr)
	}
	s.Wall = m.Wall
	var lead bytes.Buffer
	if err := matrixTemplate().Execute(&lead, g); err != nil {
		return fmt.Errorf("writing matrix HTML: %w", err)
	}
	// The grid is escaped by html/template; the page renders it as it is.
	return WriteHTMLWith(w, s, HTMLOptions{Title: "replaycheck: replay-safety matrix", Lead: template.HTML(lead.String()), Draw: func(i int) bool { return drawn[i] }}) //nolint:gosec // escaped by matrixTemplate
}

// prunedReason is why mechanism was not swept on a row; "" when the row
// does not say.
func prunedReason(ps []matrix.Pruned, mechanism string) string {
	for _, p := range ps {
		if p.Mechanism == mechanism {
			return "not swept: " + p.Reason
		}
	}
	return ""
}

// cellLabel is a verdict as short as a grid cell shows it.
func cellLabel(v matrix.Verdict) string {
	switch v {
	case matrix.Duplicate:
		return "DUP"
	case matrix.Lost:
		return "LOST"
	case matrix.ReportedFailure:
		return "FAIL?"
	case matrix.Hung:
		return "HUNG"
	case matrix.Safe:
		return "ok"
	}
	return "?"
}

// cellClass is a verdict's CSS class in the grid.
func cellClass(v matrix.Verdict) string {
	switch v {
	case matrix.Duplicate, matrix.Lost:
		return string(rules.Fail)
	case matrix.ReportedFailure, matrix.Hung:
		return "known"
	case matrix.Safe:
		return string(rules.Pass)
	}
	return string(rules.Unknown)
}

type matrixGrid struct {
	Total    string
	Families []gridFamily
	Columns  []matrixColumn
	Rows     []gridRow
}

type gridFamily struct {
	Name string
	Span int
}

type gridRow struct {
	Agent, Version, Error, Pruned string
	Cells                         []gridCell
}

type gridCell struct{ Label, Class, Title, Link string }

// matrixTemplate is parsed on first use.
var matrixTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("matrix").Parse(matrixSource))
})

const matrixSource = `<style>
table.grid { border-collapse: collapse; margin: 0 0 12px; font-size: 12px; }
table.grid th, table.grid td { border: 1px solid var(--line); padding: 3px 5px; text-align: center; white-space: nowrap; }
table.grid th.fam { background: #eef3fb; }
table.grid th.mech { writing-mode: vertical-rl; transform: rotate(180deg); font-weight: 500; }
table.grid td.agent { text-align: left; font-weight: 600; }
table.grid td.agent .ver { font-weight: 400; color: var(--muted); }
table.grid td a { color: inherit; text-decoration: none; display: block; }
table.grid td.pass { background: #e6f4ea; color: var(--pass); }
table.grid td.fail { background: #fdecea; color: var(--fail); font-weight: 700; }
table.grid td.unknown { background: #fff8e1; color: var(--unknown); }
table.grid td.known { background: #efeafc; color: var(--known); font-weight: 700; }
table.grid td.none { color: var(--line); }
</style>
<p class="total">{{.Total}}</p>
<table class="grid">
<thead><tr><th rowspan="2">Agent</th>{{range .Families}}<th class="fam" colspan="{{.Span}}">{{.Name}}</th>{{end}}</tr>
<tr>{{range .Columns}}<th class="mech" title="{{.Doc}}">{{.Mechanism}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr><td class="agent">{{.Agent}}{{with .Version}} <span class="ver">{{.}}</span>{{end}}</td>{{if .Error}}<td colspan="{{len .Cells}}">not swept: {{.Error}}</td>{{else}}{{range .Cells}}<td class="{{.Class}}" title="{{.Title}}">{{if .Link}}<a href="{{.Link}}">{{.Label}}</a>{{else}}{{.Label}}{{end}}</td>{{end}}{{end}}</tr>
{{end}}</tbody>
</table>
<ul class="notes"><li>DUP: a write ran twice for one call · LOST: a call that never ran was not re-issued · FAIL?: a completed write reported to the model as failed · ?: no run could judge (hover for why) · ok: safe · —: not swept for this agent (hover for why). Each cell but ok opens its worst run below, drawn for a finding, listed for ?; a safe cell's run is in the matrix's JSON (--json).</li>
{{range .Rows}}{{if .Pruned}}<li>{{.Agent}} not swept: {{.Pruned}}</li>{{end}}{{end}}</ul>
`
