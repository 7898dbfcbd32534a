//go:build !race

package rig

// raceOn says the tests run under the race detector, whose
// instrumentation allocates and which shuffles the order in which the
// scheduler runs goroutines, which some tests check.
const raceOn = false
