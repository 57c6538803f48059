package run

import (
	"time"

	"github.com/replaycheck/replaycheck/internal/fakepair"
	"github.com/replaycheck/replaycheck/internal/harness/target"
)

// startFakes serves a pair of fakes configured by cfg, on the clock now, at
// addrs where set and on 127.0.0.1 port 0 otherwise.
func startFakes(cfg fakepair.Config, now func() time.Time, addrs target.FakeAddrs) (*fakepair.Pair, error) {
	cfg.UpstreamAddr, cfg.MCPAddr = addrs.Upstream, addrs.MCP
	cfg.Upstream.Clock, cfg.Ledger.Now = now, now
	return fakepair.Start(cfg)
}

// fakesOf returns the addresses a target is pointed at for p.
func fakesOf(p *fakepair.Pair) target.Fakes {
	return target.Fakes{Upstream: p.UpstreamURL(), MCP: p.MCPURL()}
}
