//go:build !unix

package client

import "os"

// openReadFlags opens a download's file.
const openReadFlags = os.O_RDONLY

// fileIdentity has nothing beyond what FileInfo says on this platform: the
// size and modification time make the version.
func fileIdentity(os.FileInfo) []byte { return nil }

// linkCount is 1: this platform does not say.
func linkCount(os.FileInfo) uint64 { return 1 }
