package run

import (
	"github.com/replaycheck/replaycheck/internal/fakepair"
	"github.com/replaycheck/replaycheck/internal/harness/target"
)

// startFakes serves a pair of fakes configured by cfg, on opts' clock,
// with its ledger appending to opts' ledger file (if any), at addrs where
// set and on 127.0.0.1 port 0 otherwise.
func startFakes(cfg fakepair.Config, opts Options, addrs target.FakeAddrs) (*fakepair.Pair, error) {
	cfg.UpstreamAddr, cfg.MCPAddr = addrs.Upstream, addrs.MCP
	cfg.Upstream.Clock, cfg.Ledger.Now = opts.Now, opts.Now
	cfg.Ledger.File = opts.LedgerLines
	return fakepair.Start(cfg)
}

// fakesOf returns the addresses a target is pointed at for p.
func fakesOf(p *fakepair.Pair) target.Fakes {
	return target.Fakes{Upstream: p.UpstreamURL(), MCP: p.MCPURL()}
}
