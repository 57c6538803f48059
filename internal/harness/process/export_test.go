package process

// Pgid is the id of p's process group, for the tests of package
// process_test (which start a client target, a package that imports this
// one, as a harness would).
func (p *Process) Pgid() int { return p.pgid }
