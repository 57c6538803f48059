//go:build race

package checklist

// raceFlag builds the copy as this test was built, so that the copy's
// builds find the dependencies make test compiled in the build cache.
const raceFlag = " -race"
