package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/yamlfile"
)

// The template variables a scenario may use, and nothing more.
const (
	// VarEntry is replaced by the run's ledger entry, "alpha-<token>".
	VarEntry = "entry"
	// VarToken is replaced by the run token.
	VarToken = "token"
)

var placeholder = regexp.MustCompile(`\{\{\s*([^{}]*?)\s*\}\}`)

// Entry returns the ledger entry of a run with token.
func Entry(token string) string { return "alpha-" + token }

// checkTemplates reports every {{x}} in src that is not {{entry}} or {{token}}.
func checkTemplates(file string, src []byte) ErrorList {
	var out ErrorList
	for _, m := range placeholder.FindAllSubmatchIndex(src, -1) {
		name := string(src[m[2]:m[3]])
		if name == VarEntry || name == VarToken {
			continue
		}
		line, col := position(src, m[0])
		out = append(out, yamlfile.NewError(file, src, line, col, "unknown template variable {{%s}}: want {{entry}} or {{token}}", name))
	}
	return out
}

// position returns the 1-based line and column (in bytes) of offset.
func position(src []byte, offset int) (int, int) {
	line := 1 + bytes.Count(src[:offset], []byte("\n"))
	start := bytes.LastIndexByte(src[:offset], '\n') + 1
	return line, offset - start + 1
}

// Rendered is a scenario with its templates filled in for one run token.
type Rendered struct {
	Token    string
	Entry    string
	Requests []Request
	Script   upstream.Script
	Faults   Faults
}

// Render fills {{entry}} and {{token}} into the scenario's requests, script
// and faults for a run with token. s is not changed.
func (s *Scenario) Render(token string) (Rendered, error) {
	entry := Entry(token)
	r := Rendered{Token: token, Entry: entry}
	reqs := s.AllRequests()
	for i := range reqs {
		if reqs[i].Prompt == "" {
			reqs[i].Prompt = DefaultPrompt
		}
	}
	if err := renderJSON(reqs, &r.Requests, token, entry); err != nil {
		return r, fmt.Errorf("rendering requests of %q: %w", s.Name, err)
	}
	script, err := s.Script().Fill(func(x string) string { return fill(x, token, entry) })
	if err != nil {
		return r, fmt.Errorf("rendering model of %q: %w", s.Name, err)
	}
	r.Script = script
	if err := renderJSON(s.Faults, &r.Faults, token, entry); err != nil {
		return r, fmt.Errorf("rendering faults of %q: %w", s.Name, err)
	}
	return r, nil
}

// renderJSON copies in to out through JSON, filling the templates. Token and
// entry are [0-9a-z-] only, so they never need JSON escaping.
func renderJSON(in, out any, token, entry string) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal([]byte(fill(string(b), token, entry)), out)
}

func fill(s, token, entry string) string {
	return placeholder.ReplaceAllStringFunc(s, func(m string) string {
		switch strings.TrimSpace(strings.Trim(m, "{}")) {
		case VarEntry:
			return entry
		case VarToken:
			return token
		}
		return m
	})
}
