package main

import (
	"errors"
	"regexp"
	"strconv"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/run"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// The flag values below are checked as the flag is parsed, so that a bad one
// is a usage error naming where it came from: the flag, or the REPLAYCHECK_*
// variable that set it.

// shardFlag is the value of --shard: "" for every scenario, or I/N.
type shardFlag string

func (s *shardFlag) String() string { return string(*s) }
func (s *shardFlag) Type() string   { return "I/N" }

// Set checks that v is I/N.
func (s *shardFlag) Set(v string) error {
	if _, _, err := run.ParseShard(v); err != nil {
		return err
	}
	*s = shardFlag(v)
	return nil
}

// patternFlag is the value of --filter: "" for every scenario, or a
// regular expression.
type patternFlag string

func (p *patternFlag) String() string { return string(*p) }
func (p *patternFlag) Type() string   { return "REGEXP" }

// Set checks that v compiles.
func (p *patternFlag) Set(v string) error {
	if _, err := regexp.Compile(v); err != nil {
		return err
	}
	*p = patternFlag(v)
	return nil
}

// parallelFlag is the value of --parallel: how many runs at once, 0 for
// the command's default.
type parallelFlag int

func (n *parallelFlag) String() string { return strconv.Itoa(int(*n)) }
func (n *parallelFlag) Type() string   { return "N" }

// Set checks that v is a whole number, 0 or more.
func (n *parallelFlag) Set(v string) error {
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 {
		return errors.New("want a whole number, 0 (the default) or more")
	}
	*n = parallelFlag(i)
	return nil
}

// timeoutFlag is the value of --timeout: a positive duration.
type timeoutFlag time.Duration

func (d *timeoutFlag) String() string { return time.Duration(*d).String() }
func (d *timeoutFlag) Type() string   { return "duration" }

// Set checks that v is a positive duration.
func (d *timeoutFlag) Set(v string) error {
	t, err := time.ParseDuration(v)
	if err != nil || t <= 0 {
		return errors.New("want a positive duration, for example 90s or 2m")
	}
	*d = timeoutFlag(t)
	return nil
}

// mcpProtocolFlag is the value of --mcp-protocol: "" to negotiate, or one
// of wire.MCPProtocols.
type mcpProtocolFlag wire.MCPProtocol

func (p *mcpProtocolFlag) String() string { return string(*p) }
func (p *mcpProtocolFlag) Type() string   { return "VERSION" }

// Set checks that v is a version replaycheck speaks.
func (p *mcpProtocolFlag) Set(v string) error {
	if err := wire.MCPProtocol(v).Check(); err != nil {
		return err
	}
	*p = mcpProtocolFlag(v)
	return nil
}
