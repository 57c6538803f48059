package main

import (
	"fmt"
	"strconv"
)

// runCountWant says what --repeat takes.
const runCountWant = "want how many times to run each scenario, 1 or more"

// runCount is the value of --repeat: a whole number of at least 1, checked
// as the flag is parsed, so a bad one is a usage error naming the flag.
type runCount int

// String returns the count.
func (c *runCount) String() string { return strconv.Itoa(int(*c)) }

// Set parses s.
func (c *runCount) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return fmt.Errorf("%s", runCountWant)
	}
	*c = runCount(n)
	return nil
}

// Type names the value in help.
func (c *runCount) Type() string { return "N" }
