package explore

import (
	"embed"
	"strings"

	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
)

//go:embed bases/*.yaml
var basesFS embed.FS

// DefaultBases returns the bases explored on t when none are given: on a
// client target one run of its command; otherwise one streamed tool-call
// request per dialect, and on the built-in gateway also a keyed write, four
// parallel calls, a short tool timeout and a fallback group.
func DefaultBases(t target.Target) ([]*scenario.Scenario, error) {
	files := []string{"bases/dialects.yaml"}
	switch {
	case t.Traits().Client:
		files = []string{"bases/client.yaml"}
	case strings.HasPrefix(t.Name(), "builtin:"):
		files = append(files, "bases/builtin.yaml")
	}
	var out []*scenario.Scenario
	for _, f := range files {
		src, err := basesFS.ReadFile(f)
		if err != nil {
			return nil, err
		}
		ss, errs := scenario.Parse("explore:"+f, src)
		if len(errs) > 0 {
			return nil, errs
		}
		out = append(out, ss...)
	}
	return out, nil
}
