package target_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/harness/targetfile"
)

// TestLiteLLMRendersSeedConfig renders targets/litellm.yaml's config the way
// a run would, without LiteLLM: the seed's model groups on the upstream fake,
// the ledger as MCP server, num_retries 2, and the fallback variant when a
// scenario sets the fallbacks knob.
func TestLiteLLMRendersSeedConfig(t *testing.T) {
	t.Chdir(filepath.Join("..", "..", "..", "targets"))
	getenv := func(k string) string { return map[string]string{"LITELLM_MASTER_KEY": "sk-test"}[k] }
	tg, err := targetfile.Load("litellm.yaml", targetfile.Options{Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	fakes := target.Fakes{Upstream: "http://127.0.0.1:18765/v1", MCP: "http://127.0.0.1:18766/mcp"}
	one := 1
	tests := []struct {
		name         string
		knobs        *scenario.Gateway
		wantRetries  int
		wantFallback []map[string][]string
	}{
		{name: "plain", wantRetries: 2},
		{name: "fallback variant", knobs: &scenario.Gateway{Fallbacks: map[string]string{"repro-model": "backup-model"}, NumRetries: &one},
			wantRetries: 1, wantFallback: []map[string][]string{{"repro-model": {"backup-model"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := target.PlanStart(tg, fakes, tt.knobs)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"litellm", "--config", "CONFIG", "--host", "127.0.0.1", "--port", "PORT"}, plan.Argv); diff != "" {
				t.Errorf("argv (-want +got):\n%s", diff)
			}
			var cfg struct {
				ModelList []struct {
					ModelName     string `yaml:"model_name"`
					LiteLLMParams struct {
						Model   string `yaml:"model"`
						APIBase string `yaml:"api_base"`
						APIKey  string `yaml:"api_key"`
					} `yaml:"litellm_params"`
				} `yaml:"model_list"`
				MCPServers map[string]struct{ URL, Transport string } `yaml:"mcp_servers"`
				General    struct {
					MasterKey string `yaml:"master_key"`
				} `yaml:"general_settings"`
				Settings struct {
					NumRetries int `yaml:"num_retries"`
				} `yaml:"litellm_settings"`
				Guardrails []struct {
					GuardrailName string `yaml:"guardrail_name"`
					Params        struct {
						Guardrail string `yaml:"guardrail"`
						Mode      string `yaml:"mode"`
						DefaultOn bool   `yaml:"default_on"`
					} `yaml:"litellm_params"`
				} `yaml:"guardrails"`
				Router struct {
					Fallbacks []map[string][]string `yaml:"fallbacks"`
				} `yaml:"router_settings"`
			}
			if err := yaml.UnmarshalWithOptions([]byte(plan.Config), &cfg, yaml.Strict()); err != nil {
				t.Fatalf("rendered config is not YAML: %v\n%s", err, plan.Config)
			}
			var groups []string
			for _, m := range cfg.ModelList {
				groups = append(groups, m.ModelName)
				if m.LiteLLMParams.APIBase != fakes.Upstream || m.LiteLLMParams.APIKey != "os.environ/OPENAI_API_KEY" {
					t.Errorf("model %s: %+v", m.ModelName, m.LiteLLMParams)
				}
			}
			if diff := cmp.Diff([]string{"repro-model", "backup-model"}, groups); diff != "" {
				t.Errorf("model groups (-want +got):\n%s", diff)
			}
			if l := cfg.MCPServers["ledger"]; l.URL != fakes.MCP || l.Transport != "http" {
				t.Errorf("mcp_servers.ledger: %+v", l)
			}
			if cfg.General.MasterKey != "os.environ/LITELLM_MASTER_KEY" || cfg.Settings.NumRetries != tt.wantRetries {
				t.Errorf("settings: master key %q, num_retries %d", cfg.General.MasterKey, cfg.Settings.NumRetries)
			}
			if len(cfg.Guardrails) != 1 || cfg.Guardrails[0].GuardrailName != "block-mcp" || cfg.Guardrails[0].Params.Guardrail != "custom_guardrail.BlockMCPTools" {
				t.Errorf("guardrails: %+v", cfg.Guardrails)
			}
			if diff := cmp.Diff(tt.wantFallback, cfg.Router.Fallbacks); diff != "" {
				t.Errorf("fallbacks (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := os.Stat("custom_guardrail.py"); err != nil {
		t.Errorf("the guardrail module the config names is not next to it: %v", err)
	}
	// The error points at the header's value holding ${LITELLM_MASTER_KEY},
	// wherever the file has it.
	src, err := os.ReadFile("litellm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	line := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "  Authorization: Bearer ${LITELLM_MASTER_KEY}") }) + 1
	if line == 0 {
		t.Fatal("litellm.yaml has no Authorization header with ${LITELLM_MASTER_KEY}")
	}
	at := fmt.Sprintf("litellm.yaml:%d:%d:", line, strings.Index(lines[line-1], "Bearer")+1)
	_, err = targetfile.Load("litellm.yaml", targetfile.Options{Getenv: func(string) string { return "" }})
	if err == nil || !strings.Contains(err.Error(), at) || !strings.Contains(err.Error(), "LITELLM_MASTER_KEY is not set") {
		t.Errorf("without LITELLM_MASTER_KEY: %v, want it at %s", err, at)
	}
}

// TestGatewayProcessRendersKnobs renders targets/gateway-process.yaml's
// config the way a run would: the fakes' URLs, and each gateway knob a
// scenario sets under the key `replaycheck gateway --config` reads.
func TestGatewayProcessRendersKnobs(t *testing.T) {
	t.Chdir(filepath.Join("..", "..", "..", "targets"))
	tg, err := targetfile.Load("gateway-process.yaml", targetfile.Options{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	fakes := target.Fakes{Upstream: "http://127.0.0.1:18765/v1", MCP: "http://127.0.0.1:18766/mcp"}
	type gatewayConfig struct {
		Upstream          string            `yaml:"upstream"`
		MCP               string            `yaml:"mcp"`
		NumRetries        *int              `yaml:"num_retries"`
		ToolTimeout       string            `yaml:"tool_timeout"`
		StreamIdleTimeout string            `yaml:"stream_idle_timeout"`
		Fallbacks         map[string]string `yaml:"fallbacks"`
	}
	one := 1
	tests := []struct {
		name  string
		knobs *scenario.Gateway
		want  gatewayConfig
	}{
		{name: "no knobs", want: gatewayConfig{Upstream: fakes.Upstream, MCP: fakes.MCP}},
		{name: "every knob", knobs: &scenario.Gateway{NumRetries: &one, Fallbacks: map[string]string{"repro-model": "backup-model"},
			ToolTimeout: fault.Duration(100 * time.Millisecond), StreamIdleTimeout: fault.Duration(500 * time.Millisecond)},
			want: gatewayConfig{Upstream: fakes.Upstream, MCP: fakes.MCP, NumRetries: &one, ToolTimeout: "100ms", StreamIdleTimeout: "500ms",
				Fallbacks: map[string]string{"repro-model": "backup-model"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := target.PlanStart(tg, fakes, tt.knobs)
			if err != nil {
				t.Fatal(err)
			}
			var got gatewayConfig
			if err := yaml.UnmarshalWithOptions([]byte(plan.Config), &got, yaml.Strict()); err != nil {
				t.Fatalf("rendered config is not the gateway's YAML: %v\n%s", err, plan.Config)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s\n%s", diff, plan.Config)
			}
		})
	}
}
