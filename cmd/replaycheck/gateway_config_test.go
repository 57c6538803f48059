package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestGatewayConfigFile: --config fills the options from a YAML file, flags
// given on the command line win, and a bad file is exit 2 at its line.
func TestGatewayConfigFile(t *testing.T) {
	defaults := gatewayOptions{Upstream: "http://127.0.0.1:8765/v1", MCP: "http://127.0.0.1:8766/mcp", Mode: "guarded", NumRetries: 2, ToolTimeout: 10 * time.Second, StreamIdleTimeout: 5 * time.Second}
	tests := []struct {
		name    string
		file    string
		changed []string
		want    gatewayOptions
		wantErr string
	}{
		{
			name: "every setting",
			file: "upstream: http://127.0.0.1:1/v1\nmcp: http://127.0.0.1:2/mcp\nmode: naive\nbugs: [stream-splice]\nnum_retries: 0\n" +
				"fallbacks: {repro-model: backup-model, a-model: b-model}\ntool_timeout: 100ms\nstream_idle_timeout: 250ms\n",
			want: gatewayOptions{Upstream: "http://127.0.0.1:1/v1", MCP: "http://127.0.0.1:2/mcp", Mode: "naive", Bugs: []string{"stream-splice"},
				NumRetries: 0, Fallbacks: []string{"a-model=b-model", "repro-model=backup-model"}, ToolTimeout: 100 * time.Millisecond,
				StreamIdleTimeout: 250 * time.Millisecond},
		},
		{
			name: "flags win", file: "upstream: http://127.0.0.1:1/v1\nmode: naive\nnum_retries: 5\nstream_idle_timeout: 1s\n", changed: []string{"mode", "num-retries", "stream-idle-timeout"},
			want: gatewayOptions{Upstream: "http://127.0.0.1:1/v1", MCP: defaults.MCP, Mode: "guarded", NumRetries: 2, ToolTimeout: defaults.ToolTimeout, StreamIdleTimeout: defaults.StreamIdleTimeout},
		},
		{name: "unknown field", file: "upstream: x\nretries: 3\n", wantErr: "gateway.yaml:2:1: unknown field \"retries\""},
		{name: "bad duration", file: "tool_timeout: soon\n", wantErr: "gateway.yaml:1:15:"},
		{name: "alias bomb", file: "fallbacks:\n" + laughs("  "), wantErr: "gateway.yaml:8:12: document expands to more than 1048576 nodes through its aliases"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "gateway.yaml")
			if err := os.WriteFile(path, []byte(tt.file), 0o644); err != nil {
				t.Fatal(err)
			}
			opts := defaults
			opts.Config = path
			err := applyGatewayFile(&opts, func(f string) bool { return strings.Contains(" "+strings.Join(tt.changed, " ")+" ", " "+f+" ") })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || exitCode(err) != exitBadUsage {
					t.Fatalf("error %v (exit %d), want one containing %q, exit 2", err, exitCode(err), tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Config = path
			if diff := cmp.Diff(tt.want, opts, cmpopts.IgnoreFields(gatewayOptions{}, "Getenv", "Ready")); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}
