//go:build !race

package e2e_test

// raceEnabled: the race detector is on, so big transfers are made smaller.
const raceEnabled = false
