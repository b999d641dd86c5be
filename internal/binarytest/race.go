//go:build race

package binarytest

// raceBuild: a test binary built with -race builds ferry with it too, so
// that the race detector also watches the processes the tests start.
const raceBuild = true
