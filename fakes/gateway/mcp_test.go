package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/wire"
)

func TestModelToolTakesOutIdempotencyKey(t *testing.T) {
	tests := []struct {
		name      string
		schema    map[string]any
		want      map[string]any
		wantKeyed bool
	}{
		{
			name: "keyed",
			schema: map[string]any{"type": "object",
				"properties": map[string]any{"entry": map[string]any{"type": "string"}, wire.KeyArgument: map[string]any{"type": "string"}},
				"required":   []any{"entry", wire.KeyArgument}},
			want: map[string]any{"type": "object",
				"properties": map[string]any{"entry": map[string]any{"type": "string"}},
				"required":   []any{"entry"}},
			wantKeyed: true,
		},
		{
			name: "keyed, nothing else required",
			schema: map[string]any{"type": "object",
				"properties": map[string]any{wire.KeyArgument: map[string]any{"type": "string"}},
				"required":   []any{wire.KeyArgument}},
			want:      map[string]any{"type": "object", "properties": map[string]any{}, "required": []any{}},
			wantKeyed: true,
		},
		{
			name:   "not keyed",
			schema: map[string]any{"type": "object", "properties": map[string]any{"entry": map[string]any{"type": "string"}}, "required": []any{"entry"}},
			want:   map[string]any{"type": "object", "properties": map[string]any{"entry": map[string]any{"type": "string"}}, "required": []any{"entry"}},
		},
		{
			name: "no schema",
			want: map[string]any{"type": "object"},
		},
	}
	g := &Gateway{cfg: Config{ServerLabel: "ledger"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var schema any
			if tt.schema != nil {
				schema = tt.schema
			}
			got := g.modelTool(&mcp.Tool{Name: "commit_write", InputSchema: schema})
			if got.Name != "ledger-commit_write" || got.Tool != "commit_write" || got.Keyed != tt.wantKeyed {
				t.Errorf("name %q tool %q keyed %v, want ledger-commit_write commit_write %v", got.Name, got.Tool, got.Keyed, tt.wantKeyed)
			}
			if diff := cmp.Diff(tt.want, got.Parameters); diff != "" {
				t.Errorf("parameters (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMCPErrorHidesPassword: an MCP URL with a password in it is shown
// without the password when the server cannot be reached.
func TestMCPErrorHidesPassword(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	host := strings.TrimPrefix(dead.URL, "http://")
	dead.Close()
	g, err := New(Config{Upstream: "http://127.0.0.1:1/v1", MCP: "http://ops:s3cret-pw@" + host + "/mcp", ToolTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	w := httptest.NewRecorder()
	g.ServeHTTP(w, httptest.NewRequest("POST", pathChat, strings.NewReader(seedBody(pathChat, seedAsk, false, false))))
	msg, _ := errorOf(t, w.Body.Bytes())
	if !strings.Contains(msg, "connecting to MCP server http://ops:xxxxx@"+host+"/mcp") {
		t.Errorf("message %q does not name the server", msg)
	}
	if strings.Contains(msg, "s3cret-pw") {
		t.Errorf("message %q shows the password", msg)
	}
}

// TestRedactURL: what the banner and error messages show of a URL keeps no
// password and no query value.
func TestRedactURL(t *testing.T) {
	tests := []struct {
		name, raw, want string
	}{
		{"plain", "http://127.0.0.1:8765/v1", "http://127.0.0.1:8765/v1"},
		{"password", "http://u:s3cret@127.0.0.1:8765/v1", "http://u:xxxxx@127.0.0.1:8765/v1"},
		{"query key", "https://example.test/v1beta?key=s3cret&alt=sse", "https://example.test/v1beta?alt=xxxxx&key=xxxxx"},
		{"both", "http://u:pw-s3cret@h/v1?api-key=s3cret", "http://u:xxxxx@h/v1?api-key=xxxxx"},
		{"unparsable", "http://h/v1?key=s3cret%zz\x7f", "(unparsable URL, not shown)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RedactURL(tt.raw)
			if got != tt.want {
				t.Errorf("RedactURL(%q) = %q, want %q", tt.raw, got, tt.want)
			}
			if strings.Contains(got, "s3cret") {
				t.Errorf("RedactURL(%q) = %q shows the secret", tt.raw, got)
			}
		})
	}
}
