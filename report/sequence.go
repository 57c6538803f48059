package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/replaycheck/replaycheck/internal/harness/history"
)

// svgDiagram is a run's sequence diagram as SVG primitives, drawn in this
// order: rectangles, lines, polygons, circles, texts.
type svgDiagram struct {
	Width, Height int
	Rects         []svgRect
	Lines         []svgLine
	Polys         []svgPoly
	Circles       []svgCircle
	Texts         []svgText
}

type svgRect struct {
	X, Y, W, H, R int
	Class         string
}

type svgLine struct {
	X1, Y1, X2, Y2 int
	Class          string
}

type svgPoly struct{ Points, Class string }

type svgCircle struct {
	X, Y, R int
	Class   string
}

type svgText struct {
	X, Y          int
	Anchor, Class string
	Text          string
}

// The diagram's geometry, in SVG user units (pixels at 100%).
const (
	seqWidth   = 1320
	seqTimeCol = 84  // the offsets' column, left of the lifelines
	seqFirstX  = 210 // the app's lifeline
	seqSpacing = 310 // between lifelines
	seqLine    = 15  // a line of text
	seqCharW   = 6.6 // the width of an average character of a 12px label (the note box assumes it too)
	seqNoteW   = 290 // a note box on one lifeline
	seqHeadW   = 210 // a lifeline's head box
)

// lifelineX returns the x of p's lifeline.
func lifelineX(p Party) int { return seqFirstX + int(p)*seqSpacing }

// drawSequence lays out steps (Explain of h) as a sequence diagram: a
// lifeline per party, an arrow per message (dashed for answers), a band
// behind replays (red) and injected faults (orange) with a mark where the
// fault hit, a dashed rule where a new attempt starts, and the notes.
func drawSequence(h *history.History, steps []Step) svgDiagram {
	d := svgDiagram{Width: seqWidth}
	heads := map[Party][2]string{
		PartyApp:    {"app / client", appSub(h)},
		PartyTarget: {"target", TerminalText(h.Target)},
		PartyModel:  {"model upstream", upstreamSub(h)},
		PartyLedger: {"ledger", "MCP server"},
	}
	for _, p := range parties {
		x := lifelineX(p)
		d.Rects = append(d.Rects, svgRect{X: x - seqHeadW/2, Y: 8, W: seqHeadW, H: 46, R: 6, Class: "lifebox"})
		d.Texts = append(d.Texts,
			svgText{X: x, Y: 28, Anchor: "middle", Class: "lifename", Text: heads[p][0]},
			svgText{X: x, Y: 45, Anchor: "middle", Class: "lifesub", Text: clip(heads[p][1], 34)})
	}
	many := len(h.Requests) > 1
	y := 72
	attempts := map[int]int{}
	for _, st := range steps {
		if sep := separator(st, many, attempts); sep != "" {
			y += 4
			d.Lines = append(d.Lines, svgLine{X1: 8, Y1: y, X2: seqWidth - 8, Y2: y, Class: "sep"})
			d.Texts = append(d.Texts, svgText{X: seqWidth - 10, Y: y - 4, Anchor: "end", Class: "septext", Text: sep})
			y += 12
		}
		y = d.step(st, y, many)
	}
	// The lifelines, as long as the steps, go behind the arrows.
	lives := make([]svgLine, 0, len(parties)+len(d.Lines))
	for _, p := range parties {
		x := lifelineX(p)
		lives = append(lives, svgLine{X1: x, Y1: 54, X2: x, Y2: y + 6, Class: "life"})
	}
	d.Lines = append(lives, d.Lines...)
	d.Height = y + 14
	return d
}

// separator labels the rule drawn before a step that starts a new attempt
// (or, with several app requests, a new request); "" for none. attempts
// holds each request's latest attempt drawn.
func separator(st Step, many bool, attempts map[int]int) string {
	switch {
	case many && st.Kind == StepRequest && st.Request > 1:
		return "request " + strconv.Itoa(st.Request)
	case st.Kind == StepUpstream && st.Attempt != attempts[st.Request]:
		attempts[st.Request] = st.Attempt
		if st.Attempt > 1 {
			return "attempt " + strconv.Itoa(st.Attempt)
		}
	}
	return ""
}

// step draws one step with its top at y and returns the y below it.
func (d *svgDiagram) step(st Step, y int, many bool) int {
	class := stepClass(st)
	title, body := stepLines(st, many)
	top := y
	if st.From == st.To {
		x := lifelineX(st.From)
		left := min(max(x-seqNoteW/2, seqTimeCol), seqWidth-8-seqNoteW)
		lines := append(title, wrap(strings.Join(body, " "), (seqNoteW-16)*10/66)...)
		h := seqLine*len(lines) + 8
		d.Rects = append(d.Rects, svgRect{X: left, Y: y, W: seqNoteW, H: h, R: 4, Class: strings.TrimSpace("box " + class)})
		for i, l := range lines {
			tc := "boxtext"
			if i < len(title) || class == "replay" {
				tc += " " + class
			}
			d.Texts = append(d.Texts, svgText{X: left + 8, Y: y + 15 + i*seqLine, Anchor: "start", Class: tc, Text: l})
		}
		d.Texts = append(d.Texts, svgText{X: seqTimeCol - 8, Y: y + 15, Anchor: "end", Class: "time", Text: "+" + round(st.At)})
		return y + h + 8
	}
	x1, x2 := lifelineX(st.From), lifelineX(st.To)
	span := x2 - x1
	if span < 0 {
		span = -span
	}
	width := int(float64(span-24) / seqCharW)
	var lines []svgText
	mid := (x1 + x2) / 2
	ty := y + 12
	for _, l := range title {
		lines = append(lines, svgText{X: mid, Y: ty, Anchor: "middle", Class: "lbl " + class, Text: l})
		ty += seqLine
	}
	for _, l := range wrap(strings.Join(body, " "), width) {
		lc := "lbl"
		if class == "session" || class == "ledger" || class == "failed" {
			lc += " " + class
		}
		lines = append(lines, svgText{X: mid, Y: ty, Anchor: "middle", Class: lc, Text: l})
		ty += seqLine
	}
	ay := ty - 4
	var notes []svgText
	ny := ay + 17
	for _, n := range st.Notes {
		for _, l := range wrap(n, width) {
			notes = append(notes, svgText{X: mid, Y: ny, Anchor: "middle", Class: "note", Text: l})
			ny += seqLine - 1
		}
	}
	if st.Kind == StepAnswer && st.Body != "" {
		notes = append(notes, svgText{X: mid, Y: ny, Anchor: "middle", Class: "note", Text: "body: " + clip(oneLine(st.Body), width-8)})
		ny += seqLine - 1
	}
	bottom := ay + 8
	if len(notes) > 0 {
		bottom = ny - 6
	}
	if class == "replay" || class == "fault" {
		d.Rects = append(d.Rects, svgRect{X: 4, Y: top - 4, W: seqWidth - 8, H: bottom - top + 8, R: 4, Class: "band " + class})
	}
	d.Texts = append(d.Texts, lines...)
	d.Texts = append(d.Texts, notes...)
	d.Texts = append(d.Texts, svgText{X: seqTimeCol - 8, Y: ay + 4, Anchor: "end", Class: "time", Text: "+" + round(st.At)})
	dir := 1
	if x2 < x1 {
		dir = -1
	}
	from, to := x1+dir*2, x2-dir*2
	if st.Fault != "" {
		d.Circles = append(d.Circles, svgCircle{X: x1, Y: ay, R: 9, Class: "bolt"})
		d.Texts = append(d.Texts, svgText{X: x1, Y: ay + 4, Anchor: "middle", Class: "bolttext", Text: "!"})
		from = x1 + dir*10
	}
	ac := "arrow " + class
	if st.From != PartyApp && st.To == PartyApp || st.Kind == StepModelAnswer || st.From == PartyLedger {
		ac += " answer"
	}
	d.Lines = append(d.Lines, svgLine{X1: from, Y1: ay, X2: to - dir*8, Y2: ay, Class: ac})
	d.Polys = append(d.Polys, svgPoly{Class: "head " + class,
		Points: fmt.Sprintf("%d,%d %d,%d %d,%d", to, ay, to-dir*10, ay-5, to-dir*10, ay+5)})
	return bottom + 10
}

// stepClass is the class a step is drawn with: replay, fault, failed,
// session, ledger or "".
func stepClass(st Step) string {
	switch {
	case st.Replay(), st.Kind == StepLedger && st.Execution > 1 && st.From == st.To:
		return "replay"
	case st.Fault != "":
		return "fault"
	case st.Failed:
		return "failed"
	case st.Kind == StepSession:
		return "session"
	case st.Kind == StepLedger && st.From == PartyLedger && st.Label != "result":
		return "ledger"
	}
	return ""
}

// stepLines splits a step's text into its marks (REPLAY, FAULT), drawn
// bold on lines of their own, and the rest, wrapped to the arrow.
func stepLines(st Step, many bool) (title, body []string) {
	if st.Replay() {
		title = append(title, fmt.Sprintf("REPLAY #%d · first ran at +%s", st.Execution, round(st.FirstAt)))
	}
	if st.Fault != "" {
		title = append(title, "FAULT: "+TerminalText(st.Fault))
	}
	var b strings.Builder
	if many && st.Request > 0 && (st.Kind == StepRequest || st.Kind == StepAnswer || st.Kind == StepUpstream) {
		fmt.Fprintf(&b, "request %d · ", st.Request)
	}
	switch st.Kind {
	case StepUpstream:
		fmt.Fprintf(&b, "attempt %d · ", st.Attempt)
	case StepModelAnswer:
		fmt.Fprintf(&b, "answer %d: ", st.ModelCall)
	}
	b.WriteString(TerminalText(st.Label))
	body = append(body, b.String())
	if st.Kind == StepToolCall {
		if t := causeText(st); t != "" {
			body = append(body, "("+t+")")
		}
	}
	return title, body
}

// appSub says what the app spoke to the target: its API paths.
func appSub(h *history.History) string {
	var paths []string
	for _, x := range h.Requests {
		p := x.Path
		if x.Client != nil {
			p = "client command"
		}
		if p != "" && !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	return TerminalText(strings.Join(paths, ", "))
}

// upstreamSub says what the target spoke to the model: its API paths.
func upstreamSub(h *history.History) string {
	var paths []string
	for _, u := range h.Upstream {
		if !slices.Contains(paths, u.Path) {
			paths = append(paths, u.Path)
		}
	}
	if len(paths) == 0 {
		return "no request"
	}
	return TerminalText(strings.Join(paths, ", "))
}

// wrap breaks s into lines of at most width characters at spaces; a word
// longer than width is cut.
func wrap(s string, width int) []string {
	width = max(width, 12)
	var lines []string
	cur := ""
	for _, w := range strings.Fields(s) {
		for utf8.RuneCountInString(w) > width {
			if cur != "" {
				lines = append(lines, cur)
				cur = ""
			}
			r := []rune(w)
			lines = append(lines, string(r[:width]))
			w = string(r[width:])
		}
		switch {
		case cur == "":
			cur = w
		case utf8.RuneCountInString(cur)+1+utf8.RuneCountInString(w) <= width:
			cur += " " + w
		default:
			lines = append(lines, cur)
			cur = w
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

// clip cuts s to n runes with an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:max(n-1, 0)]) + "…"
}
