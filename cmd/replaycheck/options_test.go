package main

import (
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/harness/explore"
	"github.com/replaycheck/replaycheck/internal/harness/run"
)

// commandOptions are the options structs of the commands.
var commandOptions = []reflect.Type{
	reflect.TypeFor[baselineOptions](), reflect.TypeFor[exploreOptions](), reflect.TypeFor[gatewayOptions](),
	reflect.TypeFor[listOptions](), reflect.TypeFor[reportMergeOptions](), reflect.TypeFor[rulesOptions](),
	reflect.TypeFor[runOptions](), reflect.TypeFor[schemaOptions](), reflect.TypeFor[serveOptions](),
	reflect.TypeFor[validateOptions](),
}

// fields returns the fields of struct type t, those of embedded structs
// included, by name.
func fields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for _, f := range reflect.VisibleFields(t) {
		if !f.Anonymous {
			out[f.Name] = f.Type
		}
	}
	return out
}

// TestOptionNamesMeanOneThing: in the commands' options and the harness's,
// Out and ErrOut are writers (no Stdout beside them), a name ending in Dir
// or File is a path; among the commands one name has one type; and what
// serve's options share by name with the fakes' configs is of one type.
func TestOptionNamesMeanOneThing(t *testing.T) {
	writer := reflect.TypeFor[io.Writer]()
	all := append([]reflect.Type{reflect.TypeFor[run.Options](), reflect.TypeFor[explore.Options]()}, commandOptions...)
	for _, st := range all {
		for name, ft := range fields(st) {
			switch {
			case (name == "Out" || name == "ErrOut") && ft != writer:
				t.Errorf("%s.%s is a %s, want the io.Writer every command's %s is", st, name, ft, name)
			case name == "Stdout" || name == "Stderr":
				t.Errorf("%s.%s: name the writer Out or ErrOut, as every command does", st, name)
			case (strings.HasSuffix(name, "Dir") || strings.HasSuffix(name, "File")) && ft.Kind() != reflect.String:
				t.Errorf("%s.%s is a %s, want a path (string)", st, name, ft)
			}
		}
	}

	// Verbose is a count of -v for run (-vv adds timelines), a switch for
	// the others: the same setting; Ready is told each command's own
	// addresses.
	seen := map[string]reflect.Type{}
	where := map[string]reflect.Type{}
	for _, st := range commandOptions {
		for name, ft := range fields(st) {
			if prev, ok := seen[name]; ok && prev != ft && name != "Verbose" && name != "Ready" {
				t.Errorf("%s.%s is a %s, but %s.%s is a %s", st, name, ft, where[name], name, prev)
			}
			seen[name], where[name] = ft, st
		}
	}

	serve := fields(reflect.TypeFor[serveOptions]())
	for _, cfg := range []reflect.Type{reflect.TypeFor[upstream.Config](), reflect.TypeFor[ledger.Config]()} {
		for name, ft := range fields(cfg) {
			if st, ok := serve[name]; ok && st != ft {
				t.Errorf("serveOptions.%s is a %s, but %s.%s is a %s", name, st, cfg, name, ft)
			}
		}
	}
}
