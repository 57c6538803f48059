// Package checklist holds TestChecklists, which keeps the checklists of the
// package docs true: the docs that say how to add an upstream fault kind
// (fakes/upstream), an MCP fault kind (fakes/ledger), a rule
// (internal/harness/rules), a gateway switch (fakes/gateway) and a dialect
// (internal/dialect) each name the files it takes, as a list under
// "Adding a THING NAME takes these files:", and the test adds a throwaway
// of each of the first four to a copy of the module, writing only to the
// files its checklist names, then builds, regenerates the schemas and
// tests the owning packages there. It has no API; it runs in go test ./...
// (not -short).
package checklist
