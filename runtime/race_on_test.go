//go:build race

package rig_test

const raceEnabled = true
