package matrix

import (
	"fmt"

	"github.com/replaycheck/replaycheck/internal/harness/history"
)

// Merge joins the matrices of shards (matrix --shard I/N) into one: their
// rows in order of the parts, the longest wall time. An agent in two parts
// is an error: merge the parts of disjoint shards of one matrix.
func Merge(names []string, parts []*Matrix) (*Matrix, error) {
	out := &Matrix{Version: FormatVersion, Kind: KindMatrix}
	from := map[string]string{}
	for i, p := range parts {
		if out.Seed == "" {
			out.Seed = p.Seed
		}
		for _, r := range p.Rows {
			if prev, ok := from[r.Target]; ok {
				return nil, fmt.Errorf("merging matrices: agent %s is in %s and in %s: merge the parts of disjoint shards", r.Target, prev, names[i])
			}
			from[r.Target] = names[i]
			out.Rows = append(out.Rows, r)
		}
		out.Wall = history.Duration(max(out.Wall.D(), p.Wall.D()))
	}
	return out, nil
}
