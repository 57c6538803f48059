package gateway

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Defaults of Config.
const (
	DefaultServerLabel     = "ledger"
	DefaultNumRetries      = 2
	DefaultToolTimeout     = 10 * time.Second
	DefaultSessionTimeout  = 30 * time.Second
	DefaultBodyTimeout     = 30 * time.Second
	DefaultUpstreamTimeout = 60 * time.Second
	// DefaultStreamIdleTimeout is short enough that a request whose every
	// attempt (three by default) meets a silent stream still ends within the
	// harness's default scenario deadline (30s): an error the app sees, not
	// a hang.
	DefaultStreamIdleTimeout = 5 * time.Second
	DefaultBackoffBase       = 2 * time.Millisecond
	DefaultBackoffCap        = 50 * time.Millisecond
	DefaultBackoffBudget     = 2 * time.Second
	DefaultBreakerCooldown   = 60 * time.Second
	// BreakerThreshold is the number of consecutive strikes that open the
	// per-server circuit breaker.
	BreakerThreshold = 3
)

// Config configures a Gateway. Only Upstream and MCP are required.
type Config struct {
	// Upstream is the model API base URL including /v1, for example
	// http://127.0.0.1:8765/v1.
	Upstream string
	// MCP is the ledger's Streamable HTTP URL, for example
	// http://127.0.0.1:8766/mcp.
	MCP string
	// MCPCommand, when set, is the MCP server's command (argv) over stdio:
	// the gateway spawns it as a process and talks MCP over its stdin and
	// stdout instead of connecting to MCP, which may then be "". One process
	// serves every request, as the HTTP session does; when it exits, the next
	// request that needs it spawns it anew. Close ends it (closing its stdin,
	// then SIGTERM and SIGKILL if it does not exit).
	MCPCommand []string
	// Checkpoint, when set, is the path of the gateway's checkpoint file:
	// every app request's turn is recorded there as it begins, its tool
	// calls as they run and its end (see checkpoint.go), so that a gateway
	// started after a kill resumes the turns left pending (Resume). ""
	// keeps no checkpoint.
	Checkpoint string
	// ServerLabel is the label apps use for the MCP server in their tools
	// list (`"server_label":"ledger"`) and the prefix of the function names the
	// model sees (`ledger-commit_write`). "" means DefaultServerLabel.
	ServerLabel string
	// Bugs are the switched-on replay bugs; nil is the guarded gateway.
	Bugs Bugs
	// NumRetries is how many times the router retries a request on one model
	// group before it falls back. 0 means DefaultNumRetries; a negative value
	// means no retries.
	NumRetries int
	// Fallbacks maps a model group to the group tried after it is exhausted.
	// Chains are followed; a cycle ends the chain.
	Fallbacks map[string]string
	// MasterKey, when not "", must be presented as `Authorization: Bearer
	// KEY` (or `x-api-key: KEY`); other requests get 401. It is never logged.
	MasterKey string
	// ToolTimeout bounds one MCP tools/call from when its request was
	// written to the connection, and nothing else. 0 means
	// DefaultToolTimeout.
	ToolTimeout time.Duration
	// SessionTimeout bounds opening the MCP session (initialize, and the
	// answer to the GET of its SSE stream), listing its tools and getting a
	// tools/call's request written, which do not count against ToolTimeout.
	// 0 means DefaultSessionTimeout.
	SessionTimeout time.Duration
	// BodyTimeout bounds reading an app request's body, so a client that
	// sends it slowly cannot hold a connection; a body not read in time gets
	// 408. 0 means DefaultBodyTimeout.
	BodyTimeout time.Duration
	// UpstreamTimeout bounds one model API call. 0 means
	// DefaultUpstreamTimeout.
	UpstreamTimeout time.Duration
	// StreamIdleTimeout gives up on a streamed model answer that sends
	// nothing for this long (a stalled stream): the call fails as a cut
	// stream. 0 means DefaultStreamIdleTimeout.
	StreamIdleTimeout time.Duration
	// Backoff shapes the router's waits between retries.
	Backoff Backoff
	// BreakerCooldown is how long an open circuit breaker refuses calls. 0
	// means DefaultBreakerCooldown.
	BreakerCooldown time.Duration
	// Models maps a model group to the upstream model name; a group missing
	// from the map is sent upstream under its own name.
	Models map[string]string
	// HTTPClient carries both the model API calls and the MCP session; nil
	// means a client of the gateway's own (64 idle connections per host),
	// whose idle connections Close closes.
	HTTPClient *http.Client
	// Logger receives one line per request and per decision; nil discards.
	Logger *slog.Logger
	// Rand is the jitter source. nil means a generator with a fixed seed, so
	// the same run waits the same. The gateway serialises its use.
	Rand *rand.Rand
}

// Backoff is the guarded router's wait policy: capped exponential backoff
// with jitter, at least any Retry-After the upstream asked for, within a
// total-wait budget per app request.
type Backoff struct {
	// Base is the first wait; 0 means DefaultBackoffBase.
	Base time.Duration
	// Cap bounds one computed wait (not a Retry-After); 0 means
	// DefaultBackoffCap.
	Cap time.Duration
	// Budget bounds the sum of the waits of one app request; when the next
	// wait would exceed it, the router stops and surfaces the error. 0 means
	// DefaultBackoffBudget.
	Budget time.Duration
}

// withDefaults returns a copy of cfg with defaults filled in and its maps
// copied, or an error naming the field that is wrong.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.MCPCommand != nil && (len(cfg.MCPCommand) == 0 || cfg.MCPCommand[0] == "") {
		return cfg, errors.New("gateway config: the MCP command is empty; want the stdio server's argv")
	}
	cfg.MCPCommand = slices.Clone(cfg.MCPCommand)
	for name, raw := range map[string]string{"upstream": cfg.Upstream, "mcp": cfg.MCP} {
		if name == "mcp" && cfg.MCPCommand != nil {
			continue // spawned over stdio
		}
		if raw == "" {
			return cfg, fmt.Errorf("gateway config: %s URL is required", name)
		}
		u, err := url.Parse(raw)
		if err != nil {
			return cfg, fmt.Errorf("gateway config: %s URL %q: %w", name, raw, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			return cfg, fmt.Errorf("gateway config: %s URL %q: want http(s)://host[:port]/path", name, raw)
		}
	}
	cfg.Upstream = strings.TrimRight(cfg.Upstream, "/")
	if cfg.ServerLabel == "" {
		cfg.ServerLabel = DefaultServerLabel
	}
	if strings.ContainsAny(cfg.ServerLabel, " -/") {
		return cfg, errors.New("gateway config: server label must not contain spaces, '-' or '/'")
	}
	switch {
	case cfg.NumRetries == 0:
		cfg.NumRetries = DefaultNumRetries
	case cfg.NumRetries < 0:
		cfg.NumRetries = 0
	}
	if cfg.ToolTimeout <= 0 {
		cfg.ToolTimeout = DefaultToolTimeout
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	if cfg.UpstreamTimeout <= 0 {
		cfg.UpstreamTimeout = DefaultUpstreamTimeout
	}
	if cfg.StreamIdleTimeout <= 0 {
		cfg.StreamIdleTimeout = DefaultStreamIdleTimeout
	}
	if cfg.Backoff.Base <= 0 {
		cfg.Backoff.Base = DefaultBackoffBase
	}
	if cfg.Backoff.Cap <= 0 {
		cfg.Backoff.Cap = DefaultBackoffCap
	}
	if cfg.Backoff.Budget <= 0 {
		cfg.Backoff.Budget = DefaultBackoffBudget
	}
	if cfg.BreakerCooldown <= 0 {
		cfg.BreakerCooldown = DefaultBreakerCooldown
	}
	cfg.Bugs = maps.Clone(cfg.Bugs)
	if cfg.Bugs == nil {
		cfg.Bugs = Bugs{}
	}
	cfg.Fallbacks = maps.Clone(cfg.Fallbacks)
	cfg.Models = maps.Clone(cfg.Models)
	if cfg.HTTPClient == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		cfg.HTTPClient = &http.Client{Transport: t}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.New(rand.NewPCG(1, 2))
	}
	return cfg, nil
}

// chain returns the model groups the router tries for group, in order.
func (cfg Config) chain(group string) []string {
	out := []string{group}
	for next, ok := cfg.Fallbacks[group]; ok && next != ""; next, ok = cfg.Fallbacks[next] {
		if containsString(out, next) {
			break
		}
		out = append(out, next)
	}
	return out
}

// upstreamModel returns the model name sent upstream for group.
func (cfg Config) upstreamModel(group string) string {
	if m, ok := cfg.Models[group]; ok && m != "" {
		return m
	}
	return group
}

func containsString(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
