// Package version says which ferry this is: the release version, stamped at
// build time with -ldflags "-X github.com/ferry-dev/ferry/internal/version.Version=v1.2.3",
// else taken from the module's build information, else "dev".
package version

import "runtime/debug"

// Version is the release version; empty means "ask the build info".
var Version = ""

// String returns the version of this binary.
func String() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
