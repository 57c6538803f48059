package targetfile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/internal/yamlfile"
)

// VersionFile says where a target file's agent version is read, for the
// matrix's rows: the version of Package in the npm package lock Lock (the
// lock that installs it), or the first line Command prints. Exactly one of
// Package and Command is set.
type VersionFile struct {
	Package string   `yaml:"package,omitempty" json:"package,omitempty" jsonschema_description:"the npm package whose version is the agent's, read from lock, e.g. @openai/codex"`
	Lock    string   `yaml:"lock,omitempty" json:"lock,omitempty" jsonschema_description:"the package-lock.json that installs package, relative to the target file (default: clients/package-lock.json)"`
	Command []string `yaml:"command,omitempty" json:"command,omitempty" jsonschema:"minItems=1" jsonschema_description:"argv run in the target file's directory whose first line of output is the agent's version, e.g. [node_modules/.bin/codex, --version]; may use ${ENV}"`
}

// defaultLock is VersionFile.Lock unset.
const defaultLock = "clients/package-lock.json"

// versionTimeout bounds a version command.
const versionTimeout = 20 * time.Second

// checkVersion checks a target file's version key.
func checkVersion(f *source, v *VersionFile) error {
	switch {
	case v == nil:
		return nil
	case (v.Package == "") == (len(v.Command) == 0):
		return f.errorf([]any{"version"}, "version: want package (read from its package lock) or command (its first line of output), one of them")
	case v.Lock != "" && v.Package == "":
		return f.errorf([]any{"version", "lock"}, "version: lock names the lock package is read from; it needs package")
	}
	return nil
}

// ReadVersion returns the agent version the target file at path names
// (its version key): "" when it names none. A lock that does not list the
// package, or a command that fails or prints nothing, is an error.
func ReadVersion(ctx context.Context, path string, opts Options) (string, error) {
	f, err := openFile(path, opts)
	if err != nil {
		return "", err
	}
	raw, ok := f.head["version"]
	if !ok {
		return "", nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return "", fmt.Errorf("%s: version: %w", path, err)
	}
	var v VersionFile
	if err := json.Unmarshal(b, &v); err != nil {
		return "", f.errorf([]any{"version"}, "version: %v", err)
	}
	if err := checkVersion(f, &v); err != nil {
		return "", err
	}
	if v.Package != "" {
		return lockVersion(f, v)
	}
	return commandVersion(ctx, f, v.Command)
}

// ReadVariantOf returns the target file the target file at path is a
// variant of (its variant_of key), as a path joined to path's directory;
// "" when it names none.
func ReadVariantOf(path string, opts Options) (string, error) {
	f, err := openFile(path, opts)
	if err != nil {
		return "", err
	}
	raw, ok := f.head["variant_of"]
	if !ok {
		return "", nil
	}
	name, ok := raw.(string)
	if !ok {
		return "", f.errorf([]any{"variant_of"}, "variant_of: want a target file's path")
	}
	return variantOf(f, name)
}

// variantOf checks a target file's variant_of, name, and returns the file
// it names, joined to f's directory: another target file that exists.
func variantOf(f *source, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(f.dir(), path)
	}
	if info, err := os.Stat(path); err != nil || !info.Mode().IsRegular() {
		return "", f.errorf([]any{"variant_of"}, "variant_of %q: want a target file, relative to this one: %s is not a file", name, path)
	}
	if abs, err := filepath.Abs(path); err == nil {
		if self, err := filepath.Abs(f.path); err == nil && abs == self {
			return "", f.errorf([]any{"variant_of"}, "variant_of %q names this file itself", name)
		}
	}
	return path, nil
}

// openFile reads and opens the target file at path for its head's keys.
func openFile(path string, opts Options) (*source, error) {
	src, err := yamlfile.ReadFile(path, MaxSize)
	if err != nil {
		return nil, yamlfile.ReadError(path, err)
	}
	f, _, err := open(path, src, opts)
	return f, err
}

// lockVersion reads v.Package's version from v.Lock.
func lockVersion(f *source, v VersionFile) (string, error) {
	lock := v.Lock
	if lock == "" {
		lock = defaultLock
	}
	if !filepath.IsAbs(lock) {
		lock = filepath.Join(f.dir(), lock)
	}
	b, err := os.ReadFile(lock)
	if err != nil {
		return "", fmt.Errorf("%s: version: %w", f.path, err)
	}
	var l struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return "", fmt.Errorf("%s: version: reading %s: %w", f.path, lock, err)
	}
	p, ok := l.Packages["node_modules/"+v.Package]
	if !ok || p.Version == "" {
		return "", fmt.Errorf("%s: version: %s installs no package %s", f.path, lock, v.Package)
	}
	return p.Version, nil
}

// commandVersion runs argv in the file's directory and returns the first
// line of its output.
func commandVersion(ctx context.Context, f *source, argv []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = f.dir()
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return "", fmt.Errorf("%s: version: %s: %w: %s", f.path, strings.Join(argv, " "), err, strings.TrimSpace(string(exit.Stderr)))
	}
	if err != nil {
		return "", fmt.Errorf("%s: version: %s: %w", f.path, strings.Join(argv, " "), err)
	}
	line, _, _ := bytes.Cut(bytes.TrimSpace(out), []byte("\n"))
	if s := strings.TrimSpace(string(line)); s != "" {
		return s, nil
	}
	return "", fmt.Errorf("%s: version: %s printed nothing", f.path, strings.Join(argv, " "))
}
