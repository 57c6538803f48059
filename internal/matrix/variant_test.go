package matrix

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestVariantSharesTheModelColumns: an agent whose target file is a
// variant of another agent's (variant_of) at the same version is not swept
// again for the model's columns: its row has its own columns' cells only,
// lists the model's kinds as swept on the other row, and says which row;
// with --no-prune, or at another version, it is swept whole.
func TestVariantSharesTheModelColumns(t *testing.T) {
	dir := t.TempDir()
	base, variant := filepath.Join(dir, "base.yaml"), filepath.Join(dir, "variant.yaml")
	for _, f := range []string{base, variant} {
		if err := os.WriteFile(f, []byte("# a target file\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	agents := func(version string) []Agent {
		a := builtins(t)
		a[0].File, a[0].Version = base, "1.0"
		a[1].File, a[1].Version, a[1].VariantOf = variant, version, filepath.Join(dir, ".", "base.yaml")
		return a
	}
	opts := Options{Kinds: []string{"500", "drop", "mcp-drop"}}
	for _, tt := range []struct {
		name      string
		version   string
		noPrune   bool
		wantCells []string
		modelRow  string
	}{
		{"a variant", "1.0", false, []string{"mcp-drop"}, "builtin:guarded"},
		{"another version", "2.0", false, []string{"500", "drop", "mcp-drop"}, ""},
		{"--no-prune", "1.0", true, []string{"500", "drop", "mcp-drop"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := opts
			o.NoPrune = tt.noPrune
			m, err := Build(context.Background(), agents(tt.version), o)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(m.Rows[0].Cells); got != 3 {
				t.Errorf("the base row has %d cells; want 3", got)
			}
			r := m.Rows[1]
			var got []string
			for _, c := range r.Cells {
				got = append(got, c.Mechanism)
			}
			if diff := cmp.Diff(tt.wantCells, got); diff != "" {
				t.Errorf("the variant's cells (-want +got):\n%s", diff)
			}
			if r.ModelRow != tt.modelRow {
				t.Errorf("model row %q; want %q", r.ModelRow, tt.modelRow)
			}
			shared := slices.DeleteFunc(slices.Clone(r.Pruned), func(p Pruned) bool { return !strings.HasPrefix(p.Reason, "swept on builtin:guarded's row") })
			if want := 3 - len(tt.wantCells); len(shared) != want {
				t.Errorf("%d mechanisms pruned as swept on the base's row, want %d: %+v", len(shared), want, r.Pruned)
			}
		})
	}
}
