//go:build race

package main

// raceEnabled: the demo binary built by the tests is race-enabled too.
const raceEnabled = true
