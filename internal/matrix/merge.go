package matrix

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/run"
)

// Merge joins the matrices of shards (matrix --shard I/N) into one: an
// agent's rows of several parts become one row of all their cells, in
// column order, the rows in the order the parts first hold them, the
// longest wall time. names are the parts' files, for the errors. Sharded
// parts must be the shards 1..N of one matrix, each once, built with one
// seed, one list of kinds and one of agents (see checkShards); parts of no shard must
// hold disjoint agents; one cell in two parts is an error.
func Merge(names []string, parts []*Matrix) (*Matrix, error) {
	if err := checkShards(names, parts); err != nil {
		return nil, fmt.Errorf("merging matrices: %w", err)
	}
	out := &Matrix{Version: FormatVersion, Kind: KindMatrix}
	if len(parts) > 0 && parts[0].Shard != "" {
		out.Kinds, out.Agents = parts[0].Kinds, parts[0].Agents
	}
	from := map[string]string{} // an agent's first part
	cellFrom := map[string]string{}
	at := map[string]int{} // an agent's row in out
	for i, p := range parts {
		if out.Seed == "" {
			out.Seed = p.Seed
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

// checkShards refuses sharded parts that are not the shards 1..N of one
// matrix, each once: a shard given twice or missing, shards of different
// N, seeds, kinds or agents, or a whole matrix among them. Parts of no shard pass.
func checkShards(names []string, parts []*Matrix) error {
	first := slices.IndexFunc(parts, func(p *Matrix) bool { return p.Shard != "" })
	if first < 0 {
		return nil
	}
	f := parts[first]
	_, shards, err := run.ParseShard(f.Shard)
	if err != nil {
		return fmt.Errorf("%s: shard %q: %w", names[first], f.Shard, err)
	}
	given := make([]string, shards+1) // shard I's part
	for i, p := range parts {
		if p.Shard == "" {
			return fmt.Errorf("%s is a whole matrix and %s shard %s: merge the parts of one sharded matrix", names[i], names[first], f.Shard)
		}
		shard, n, err := run.ParseShard(p.Shard)
		switch {
		case err != nil:
			return fmt.Errorf("%s: shard %q: %w", names[i], p.Shard, err)
		case n != shards:
			return fmt.Errorf("%s is shard %s and %s shard %s: merge the parts of one matrix, built with one --shard I/N", names[first], f.Shard, names[i], p.Shard)
		case p.Seed != f.Seed:
			return fmt.Errorf("%s was built with seed %q and %s with %q: merge the parts of one matrix", names[first], f.Seed, names[i], p.Seed)
		case !slices.Equal(p.Kinds, f.Kinds):
			return fmt.Errorf("%s swept the kinds %s and %s %s: merge the parts of one matrix, built with one --kinds and one replaycheck", names[first], strings.Join(f.Kinds, ","), names[i], strings.Join(p.Kinds, ","))
		case !slices.Equal(p.Agents, f.Agents):
			return fmt.Errorf("%s swept the agents %s and %s %s: merge the parts of one matrix, built with one list of targets in one order", names[first], strings.Join(f.Agents, ","), names[i], strings.Join(p.Agents, ","))
		case given[shard] != "":
			return fmt.Errorf("shard %s is in %s and in %s: merge each shard's part once", p.Shard, given[shard], names[i])
		}
		given[shard] = names[i]
	}
	var missing []string
	for shard := 1; shard <= shards; shard++ {
		if given[shard] == "" {
			missing = append(missing, strconv.Itoa(shard))
		}
	}
	if len(missing) > 0 {
		which := "shard " + missing[0] + " of " + strconv.Itoa(shards) + " is"
		if len(missing) > 1 {
			which = "shards " + strings.Join(missing, ", ") + " of " + strconv.Itoa(shards) + " are"
		}
		return fmt.Errorf("%s missing: the parts given are %s; merge every shard's part (did each shard job upload its report?)", which, strings.Join(names, ", "))
	}
	return nil
}

// Copy is a reproduction file to copy when merging: From, where a part's
// file is now, To, where the merged matrix's cell names it.
type Copy struct{ From, To string }

// MoveReproductions points the cells of m, a part to merge, whose
// reproductions lie under m.Reproductions at the same files under to
// (under to/shard-I-of-N for shard I/N, since the shards of one agent
// write files of the same names), makes that m's Reproductions, and
// returns the copies that put the files there, each once, read under from
// (where m.Reproductions is now: a shard's artifact is downloaded
// elsewhere). Other cells (a client scenario's shipped file) keep theirs.
func (m *Matrix) MoveReproductions(from, to string) []Copy {
	if m.Reproductions == "" {
		return nil
	}
	if m.Shard != "" {
		to = filepath.Join(to, "shard-"+strings.Replace(m.Shard, "/", "-of-", 1))
	}
	var copies []Copy
	for i := range m.Rows {
		for j := range m.Rows[i].Cells {
			c := &m.Rows[i].Cells[j]
			rel, err := filepath.Rel(m.Reproductions, c.Reproduction)
			if c.Reproduction == "" || err != nil || !filepath.IsLocal(rel) {
				continue
			}
			cp := Copy{From: filepath.Join(from, rel), To: filepath.Join(to, rel)}
			c.Reproduction = cp.To
			if !slices.Contains(copies, cp) {
				copies = append(copies, cp)
			}
		}
	}
	m.Reproductions = to
	return copies
}
