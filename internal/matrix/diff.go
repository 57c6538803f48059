package matrix

// Change is one cell that differs between two matrices: an agent and a
// mechanism, its verdict before and after. A cell only one matrix has
// changes from or to "" (a new or a gone column, a new or a gone agent).
type Change struct {
	Target    string `json:"target"`
	Mechanism string `json:"mechanism"`
	// OldVersion and NewVersion are the agent's versions in each matrix.
	OldVersion string  `json:"old_version,omitempty"`
	NewVersion string  `json:"new_version,omitempty"`
	Old        Verdict `json:"old,omitempty"`
	New        Verdict `json:"new,omitempty"`
	// Reproduction is the new cell's reproduction, for a cell that turned
	// bad.
	Reproduction string `json:"reproduction,omitempty"`
}

// Worse reports whether the cell turned DUPLICATE or LOST from anything
// else: a change that fails the job.
func (c Change) Worse() bool { return c.New.Bad() && c.New != c.Old }

// Diff returns the cells whose verdicts differ between old and new, agents
// matched by target name, in new's row and cell order, then the cells only
// old has.
func Diff(old, new *Matrix) []Change {
	var out []Change
	for _, nr := range new.Rows {
		or, _ := old.row(nr.Target)
		for _, nc := range nr.Cells {
			oc, _ := or.Cell(nc.Mechanism)
			if oc.Verdict != nc.Verdict {
				out = append(out, Change{Target: nr.Target, Mechanism: nc.Mechanism, OldVersion: or.Version, NewVersion: nr.Version, Old: oc.Verdict, New: nc.Verdict, Reproduction: nc.Reproduction})
			}
		}
		for _, oc := range or.Cells {
			if _, ok := nr.Cell(oc.Mechanism); !ok {
				out = append(out, Change{Target: nr.Target, Mechanism: oc.Mechanism, OldVersion: or.Version, NewVersion: nr.Version, Old: oc.Verdict})
			}
		}
	}
	for _, or := range old.Rows {
		if _, ok := new.row(or.Target); ok {
			continue
		}
		for _, oc := range or.Cells {
			out = append(out, Change{Target: or.Target, Mechanism: oc.Mechanism, OldVersion: or.Version, Old: oc.Verdict})
		}
	}
	return out
}

// row returns m's row of target, and whether it has one.
func (m *Matrix) row(target string) (Row, bool) {
	for _, r := range m.Rows {
		if r.Target == target {
			return r, true
		}
	}
	return Row{}, false
}
