//go:build !race

package binarytest

const raceBuild = false
