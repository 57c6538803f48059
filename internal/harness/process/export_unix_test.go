//go:build unix

package process

// GroupAlive is groupAlive, for the tests of package process_test.
var GroupAlive = groupAlive
