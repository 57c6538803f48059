package target

import (
	"fmt"

	"github.com/replaycheck/replaycheck/internal/harness/scenario"
)

// What the tests of package target_test reach inside this one: they load
// target files with package targetfile, which imports this package.

// StartPlan is what starting a proxy target would run, rendered without
// starting anything, for checking a shipped target file.
type StartPlan struct {
	// URL is the rendered base URL app requests go to.
	URL string
	// Argv is the rendered command; {{config}} is "CONFIG" and {{port}} is
	// "PORT" in it.
	Argv []string
	// Config is the rendered config template, "" when the file has none.
	Config string
}

// PlanStart renders what t would start for fakes f and a scenario's knobs,
// without starting anything. It fails for targets that start nothing.
func PlanStart(t Target, f Fakes, knobs *scenario.Gateway) (StartPlan, error) {
	p, ok := t.(*proxy)
	if !ok || p.spec.Start == nil {
		return StartPlan{}, fmt.Errorf("target %s starts no process", t.Name())
	}
	v := newTemplateVars(f, knobs, p.spec.Replaycheck)
	v.Port = "PORT"
	var plan StartPlan
	var err error
	if plan.URL, err = render(p.spec.URL, proxyVars, v); err != nil {
		return plan, err
	}
	if p.spec.Start.Config != "" {
		if plan.Config, err = render(p.spec.Start.Config, proxyVars, v); err != nil {
			return plan, fmt.Errorf("rendering config template: %w", err)
		}
	}
	v.Config = "CONFIG"
	if plan.Argv, err = renderArgs(p.spec.Start.Command, startVars, v); err != nil {
		return plan, fmt.Errorf("rendering start.command: %w", err)
	}
	return plan, nil
}

// ConfigPath is the rendered config's path of a proxy instance.
func ConfigPath(i Instance) string { return i.(*proxyInstance).configPath }

// ConfigTempDir is the temporary directory of a proxy instance's rendered
// config; "" when it is elsewhere.
func ConfigTempDir(i Instance) string { return i.(*proxyInstance).tempDir }

// SetPickPort makes proxies pick their ports with pick (freePort, FreePort,
// is the default) until the returned restore is called.
func SetPickPort(pick func() (string, error)) (restore func()) {
	pickPort = pick
	return func() { pickPort = freePort }
}

// FreePort is freePort.
var FreePort = freePort
