// Command agent is a small real agent client for replaycheck's client targets:
// it offers an MCP server's tools to an OpenAI-compatible chat model, runs the
// tool calls the model makes through the MCP server, sends the results back and
// prints the model's final answer.
//
// It is built on github.com/openai/openai-go/v3, whose built-in retries are left
// at their defaults, and on the MCP Go SDK's client. The --naive-retry flag wraps
// the whole tool loop in a naive retry, so the harness can show the difference:
// the SDK's own retries repeat only the failed model call (one write), the naive
// wrapper runs the tool again (more than one write).
//
// Configuration comes from the environment a replaycheck client target gets
// (OPENAI_BASE_URL, OPENAI_API_KEY, REPLAYCHECK_MCP_URL, REPLAYCHECK_PROMPT,
// REPLAYCHECK_TOKEN); flags override it. The final text goes to stdout and the
// exit code is 0; any failure is a message on stderr and exit code 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Defaults of the flags.
const (
	defaultModel    = "repro-model"
	defaultTimeout  = 60 * time.Second
	defaultMaxTurns = 8
)

// config is what one agent run needs. The zero value is not usable: BaseURL,
// APIKey, MCPURL and Prompt are required (see validate).
type config struct {
	// BaseURL is the model API base URL, e.g. http://127.0.0.1:8765/v1.
	BaseURL string
	// APIKey is sent as the bearer token; it is never printed.
	APIKey string
	// MCPURL is the MCP server's Streamable HTTP endpoint.
	MCPURL string
	// Prompt is the user message that starts the conversation.
	Prompt string
	// Token is the run token, informational only (shown on stderr).
	Token string
	// Model is the model name sent to the API.
	Model string
	// NaiveRetry is how many extra times the whole tool loop is re-run after
	// any error; 0 means no naive retry.
	NaiveRetry int
	// Timeout bounds the whole run; 0 means no deadline of its own.
	Timeout time.Duration
	// Stream asks for streamed chat completions.
	Stream bool
	// MaxTurns caps the model calls of one attempt; 0 means defaultMaxTurns.
	MaxTurns int
}

// validate reports the first missing or bad setting, naming its flag and
// environment variable.
func (c config) validate() error {
	switch {
	case c.BaseURL == "":
		return errors.New("no model API base URL: set OPENAI_BASE_URL or --base-url")
	case c.APIKey == "":
		return errors.New("no API key: set OPENAI_API_KEY (any dummy value works with the fakes)")
	case c.MCPURL == "":
		return errors.New("no MCP server URL: set REPLAYCHECK_MCP_URL or --mcp")
	case c.Prompt == "":
		return errors.New("no prompt: set REPLAYCHECK_PROMPT or --prompt")
	case c.Model == "":
		return errors.New("no model: --model is empty")
	case c.NaiveRetry < 0:
		return fmt.Errorf("--naive-retry %d: must be 0 or more", c.NaiveRetry)
	case c.Timeout < 0:
		return fmt.Errorf("--timeout %s: must not be negative", c.Timeout)
	case c.MaxTurns < 0:
		return fmt.Errorf("--max-turns %d: must be 0 or more", c.MaxTurns)
	}
	return nil
}

// parseConfig reads the environment through getenv, then the flags in args
// (without the program name), which override it. Help (-h) is flag.ErrHelp.
func parseConfig(args []string, getenv func(string) string, usage io.Writer) (config, error) {
	cfg := config{
		BaseURL:  getenv("OPENAI_BASE_URL"),
		APIKey:   getenv("OPENAI_API_KEY"),
		MCPURL:   getenv("REPLAYCHECK_MCP_URL"),
		Prompt:   getenv("REPLAYCHECK_PROMPT"),
		Token:    getenv("REPLAYCHECK_TOKEN"),
		Model:    defaultModel,
		Timeout:  defaultTimeout,
		MaxTurns: defaultMaxTurns,
	}
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(usage)
	fs.StringVar(&cfg.BaseURL, "base-url", cfg.BaseURL, "model API base URL (default $OPENAI_BASE_URL)")
	fs.StringVar(&cfg.MCPURL, "mcp", cfg.MCPURL, "MCP server Streamable HTTP URL (default $REPLAYCHECK_MCP_URL)")
	fs.StringVar(&cfg.Prompt, "prompt", cfg.Prompt, "user prompt (default $REPLAYCHECK_PROMPT)")
	fs.StringVar(&cfg.Model, "model", cfg.Model, "model name")
	fs.IntVar(&cfg.NaiveRetry, "naive-retry", 0, "re-run the whole tool loop up to N more times on any error (0: off)")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "overall deadline")
	fs.BoolVar(&cfg.Stream, "stream", false, "stream chat completions")
	fs.IntVar(&cfg.MaxTurns, "max-turns", cfg.MaxTurns, "most model calls per attempt")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: agent [flags]\n\nRuns one agent conversation against a chat model and an MCP server.\n"+
			"Environment: OPENAI_BASE_URL, OPENAI_API_KEY, REPLAYCHECK_MCP_URL, REPLAYCHECK_PROMPT, REPLAYCHECK_TOKEN.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := cfg.validate(); err != nil {
		return config{}, err
	}
	return cfg, nil
}

func main() {
	os.Exit(mainCode(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// mainCode runs the agent and returns the process exit code: 0 on success
// (and for -h), 1 on any failure, with a message on stderr.
func mainCode(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := parseConfig(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "agent: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "agent: %v\n", err)
		return 1
	}
	return 0
}
