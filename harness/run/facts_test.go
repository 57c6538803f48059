package run

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/harness/history"
)

// exportedStrings returns the exported string constants whose names start
// with prefix in the non-test Go files of dir, by name: every value the fake
// declares, found in its source so that a new one cannot be missed.
func exportedStrings(t *testing.T, dir, prefix string) map[string]string {
	t.Helper()
	return typedStrings(t, dir, prefix, func(string) bool { return true })
}

// typedStrings is exportedStrings for the constants whose declared type
// (its name; "" when untyped) typeOK accepts.
func typedStrings(t *testing.T, dir, prefix string, typeOK func(string) bool) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				typ := ""
				if id, ok := vs.Type.(*ast.Ident); ok {
					typ = id.Name
				}
				for i, id := range vs.Names {
					if !id.IsExported() || !strings.HasPrefix(id.Name, prefix) || i >= len(vs.Values) || !typeOK(typ) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out[id.Name] = v
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no %s… constants in %s", prefix, dir)
	}
	return out
}

// TestFactsMapped checks that every outcome the upstream fake can log and
// every event kind the ledger can report maps to a known value of the
// history's, written the same way (so saved histories read back unchanged),
// and that every named value of the history's is produced by some fake value.
func TestFactsMapped(t *testing.T) {
	t.Run("upstream outcomes", func(t *testing.T) {
		hit := map[history.Outcome]bool{}
		for name, v := range exportedStrings(t, "../../fakes/upstream", "Outcome") {
			got := outcomeOf(upstream.Request{Outcome: v, Status: 200})
			if _, ok := upstreamOutcomes[v]; !ok {
				t.Errorf("upstream.%s (%q) has no row in upstreamOutcomes", name, v)
			}
			if !got.Known() || string(got) != v {
				t.Errorf("upstream.%s (%q) maps to %q (known %v), want the known outcome %q", name, v, got, got.Known(), v)
			}
			hit[got] = true
		}
		for _, o := range history.NamedOutcomes() {
			if !hit[o] {
				t.Errorf("history outcome %q: no upstream outcome maps to it", o)
			}
		}
	})
	t.Run("injected statuses", func(t *testing.T) {
		for status := 100; status <= 599; status++ {
			got := outcomeOf(upstream.Request{Outcome: upstream.OutcomeInjected(status), Status: status})
			if s, ok := got.Injected(); !ok || s != status || got != history.Injected(status) || string(got) != upstream.OutcomeInjected(status) {
				t.Fatalf("injected %d maps to %q (Injected() = %d, %v)", status, got, s, ok)
			}
			if got.Cut() || got.Dropped() {
				t.Fatalf("injected %d reads as a cut", status)
			}
		}
	})
	t.Run("ledger event kinds", func(t *testing.T) {
		hit := map[history.MCPKind]bool{}
		for name, v := range exportedStrings(t, "../../fakes/ledger", "Event") {
			got := mcpKindOf(ledger.Event{Kind: v})
			if _, ok := mcpKinds[v]; !ok {
				t.Errorf("ledger.%s (%q) has no row in mcpKinds", name, v)
			}
			if string(got) != v {
				t.Errorf("ledger.%s (%q) maps to %q, want the history's kind written %q", name, v, got, v)
			}
			hit[got] = true
		}
		for _, k := range typedStrings(t, "../history", "MCP", func(typ string) bool { return typ == "MCPKind" }) {
			if !hit[history.MCPKind(k)] {
				t.Errorf("history MCP kind %q: no ledger event kind maps to it", k)
			}
		}
	})
	t.Run("ledger fault names", func(t *testing.T) {
		// A fault event's Detail is the fault's name, passed through as is.
		names := slices.Collect(maps.Values(typedStrings(t, "../history", "MCPFault", func(typ string) bool { return typ == "" })))
		for _, name := range append(ledger.Kinds(), ledger.FaultWriteFailed, ledger.FaultExpireSessionAfterExecute) {
			e := history.MCPEvent{Kind: mcpKindOf(ledger.Event{Kind: ledger.EventFault}), Detail: name}
			if !slices.Contains(names, name) || !e.IsFault(name) {
				t.Errorf("ledger fault %q is not an MCP fault name of the history's", name)
			}
		}
	})
}
