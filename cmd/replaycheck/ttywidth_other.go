//go:build !linux && !darwin

package main

import "os"

// ttyWidth is 0 (unknown) where replaycheck does not ask the terminal; set
// $COLUMNS.
func ttyWidth(*os.File) int { return 0 }
