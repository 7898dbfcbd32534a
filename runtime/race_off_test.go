//go:build !race

package rig_test

const raceEnabled = false
