package matrix

import (
	"fmt"
	"slices"

	"github.com/replaycheck/replaycheck/internal/harness/history"
)

// Merge joins the matrices of shards (matrix --shard I/N) into one: an
// agent's rows of several parts become one row of all their cells, in
// column order, the rows in the order the parts first hold them, the
// longest wall time. Two parts of one shard, or of no shard holding one
// agent, or one cell in two parts, are an error: merge the parts of
// disjoint shards of one matrix.
func Merge(names []string, parts []*Matrix) (*Matrix, error) {
	out := &Matrix{Version: FormatVersion, Kind: KindMatrix}
	from := map[string]string{} // an agent's first part, or a shard's
	cellFrom := map[string]string{}
	at := map[string]int{} // an agent's row in out
	for i, p := range parts {
		if out.Seed == "" {
			out.Seed = p.Seed
		}
		if p.Shard != "" {
			if prev, ok := from["shard "+p.Shard]; ok {
				return nil, fmt.Errorf("merging matrices: shard %s is in %s and in %s: merge the parts of disjoint shards", p.Shard, prev, names[i])
			}
			from["shard "+p.Shard] = names[i]
		}
		for _, r := range p.Rows {
			prev, ok := from[r.Target]
			if ok && p.Shard == "" {
				return nil, fmt.Errorf("merging matrices: agent %s is in %s and in %s: merge the parts of disjoint shards", r.Target, prev, names[i])
			}
			for _, c := range r.Cells {
				key := r.Target + " " + c.Mechanism
				if prev, ok := cellFrom[key]; ok {
					return nil, fmt.Errorf("merging matrices: agent %s's %s cell is in %s and in %s: merge the parts of disjoint shards", r.Target, c.Mechanism, prev, names[i])
				}
				cellFrom[key] = names[i]
			}
			if !ok {
				from[r.Target] = names[i]
				at[r.Target] = len(out.Rows)
				out.Rows = append(out.Rows, r)
				continue
			}
			joinRow(&out.Rows[at[r.Target]], r)
		}
		out.Wall = history.Duration(max(out.Wall.D(), p.Wall.D()))
	}
	return out, nil
}

// joinRow adds r, another shard's row of the same agent, to row: its cells
// and what it pruned, its runs and wall time; its fingerprint and error
// where row has none.
func joinRow(row *Row, r Row) {
	row.Cells = inColumnOrder(append(row.Cells, r.Cells...))
	for _, p := range r.Pruned {
		if !slices.Contains(row.Pruned, p) {
			row.Pruned = append(row.Pruned, p)
		}
	}
	slices.SortStableFunc(row.Pruned, func(a, b Pruned) int { return kindIndex(a.Mechanism) - kindIndex(b.Mechanism) })
	row.PrunedRuns = append(row.PrunedRuns, r.PrunedRuns...)
	slices.SortStableFunc(row.PrunedRuns, func(a, b PrunedRuns) int { return kindIndex(a.Mechanism) - kindIndex(b.Mechanism) })
	row.Runs += r.Runs
	row.Wall += r.Wall
	if row.Fingerprint == nil {
		row.Fingerprint = r.Fingerprint
	}
	if row.Error == "" {
		row.Error = r.Error
	}
}
