package target

// Resume is a target's resume command (a target file's resume): started
// after each kill of the target (a scenario's faults.target), in the same
// run directory and working directory, so that a session store or
// checkpoint file the killed life left survives into the next. Its Command
// and Env are templated as the target's own command and env (ClientVars for
// a client, StartVars for a proxy); Env is merged over the target's env.
type Resume struct {
	// Command is the argv of the resume, e.g. [claude, --continue, -p, …].
	Command []string
	// Env is added over the target's env for the resume; values may use
	// the same templates and are never shown.
	Env map[string]string
}
