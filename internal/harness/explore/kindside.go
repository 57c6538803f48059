package explore

import "slices"

// MCP reports whether k is a probe of the ledger (a fault on the MCP side);
// false for one of the upstream fake (a model request fault).
func (k Kind) MCP() bool { return k.mcp != nil }

// Kills reports whether k kills the target and starts its resume (a
// kind swept only on targets that resume).
func (k Kind) Kills() bool { return k.kill != "" }

// Fingerprinted reports whether a retry-policy fingerprint sweeps k (see
// FingerprintKinds): its cells decide the kind's verdicts on a target, so a
// later sweep need not arm it again.
func (k Kind) Fingerprinted() bool {
	return slices.ContainsFunc(FingerprintKinds(), func(f Kind) bool { return f.Name == k.Name })
}
