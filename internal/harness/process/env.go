package process

import (
	"slices"
	"strings"
)

// baseEnv are the variables of the harness's environment that every process
// it starts (a proxy, a client) gets: what a program needs to run at all,
// and nothing that may hold a credential. A target file adds its own with env
// and pass_env. On Windows the names are those the system itself needs.
var baseEnv = [...]string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TZ", "TMPDIR", "LANG", "LANGUAGE",
	"SYSTEMROOT", "WINDIR", "COMSPEC", "PATHEXT", "TEMP", "TMP", "USERPROFILE", "APPDATA", "LOCALAPPDATA",
}

// baseEnvPrefixes are the prefixes of further names every process gets: the
// locale's categories.
var baseEnvPrefixes = [...]string{"LC_"}

// Env returns the environment a target's process starts from: the
// variables of parent (KEY=VALUE) that baseEnv names or pass names (the
// target file's pass_env; a name not set is left out), and loopbackNoProxy.
// The caller adds the harness's and the file's own variables (SetEnv).
func Env(parent []string, pass []string) []string {
	var out []string
	for _, kv := range parent {
		k, _, _ := strings.Cut(kv, "=")
		if baseVar(k) || containsFold(pass, k) {
			out = append(out, kv)
		}
	}
	return SetEnv(out, loopbackNoProxy())
}

// VarName reports whether n can name a variable of an environment: not
// empty, no "=" and no NUL.
func VarName(n string) bool { return n != "" && !strings.ContainsAny(n, "=\x00") }

// Home returns env with HOME (and USERPROFILE, its Windows spelling) and
// the temporary directory (TMPDIR; TEMP and TMP on Windows) in runDir, the
// client run's scratch directory: the user's home holds their credentials
// (~/.netrc, ~/.aws, agents' own logins), which a client under test must
// not read, and what a client leaves in its temporary directory (Gemini
// CLI's error reports, a crashed run's files) goes with the run's
// directory instead of piling up in the machine's. A target file that names
// one of them in pass_env keeps the user's; one that sets it in env
// overrides both.
func Home(env []string, pass []string, runDir string) []string {
	set := map[string]string{}
	for _, group := range [][]string{{"HOME", "USERPROFILE"}, {"TMPDIR", "TEMP", "TMP"}} {
		if slices.ContainsFunc(group, func(k string) bool { return containsFold(pass, k) }) {
			continue
		}
		for _, k := range group {
			set[k] = runDir
		}
	}
	return SetEnv(env, set)
}

// baseVar reports whether every process gets variable k (baseEnv).
func baseVar(k string) bool {
	if containsFold(baseEnv[:], k) {
		return true
	}
	for _, p := range baseEnvPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// containsFold reports whether names holds k, ignoring case (Windows
// spells Path, SystemRoot).
func containsFold(names []string, k string) bool {
	for _, n := range names {
		if strings.EqualFold(n, k) {
			return true
		}
	}
	return false
}

// loopbackNoProxy keeps a target's traffic to the fakes away from any HTTP
// proxy the environment names.
func loopbackNoProxy() map[string]string {
	return map[string]string{"NO_PROXY": "127.0.0.1,localhost,::1", "no_proxy": "127.0.0.1,localhost,::1"}
}

// SetEnv returns env with the variables in set replaced or added.
func SetEnv(env []string, set map[string]string) []string {
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			out = append(out, kv)
		}
	}
	for k, v := range set {
		out = append(out, k+"="+v)
	}
	return out
}
