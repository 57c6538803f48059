package fault_test

import (
	"fmt"

	"github.com/replaycheck/replaycheck/fakes/fault"
)

// A fault's Times says on which of its matching occurrences it fires: here
// only the second, as a scenario's `times: {nth: 2}` or the command line's
// nth:2 says.
func ExampleTimes() {
	t, err := fault.ParseTimes("nth:2")
	if err != nil {
		fmt.Println(err)
		return
	}
	for n := 1; n <= 3; n++ {
		fmt.Printf("occurrence %d fires: %v\n", n, t.Fires(n))
	}
	fmt.Println(t, fault.Once, fault.Always)
	// Output:
	// occurrence 1 fires: false
	// occurrence 2 fires: true
	// occurrence 3 fires: false
	// nth:2 once always
}
