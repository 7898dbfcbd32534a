//go:build race

package rig

// raceOn says the race detector is on: it shuffles the order in which
// the scheduler runs goroutines, which some tests check.
const raceOn = true
