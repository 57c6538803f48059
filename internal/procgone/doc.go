// Package procgone checks, in tests, that the processes a test's code
// started are gone. It is for tests only.
package procgone
