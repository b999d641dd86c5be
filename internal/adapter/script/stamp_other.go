//go:build !linux && !darwin

package script

import "io/fs"

// sysStamp: size and mtime only elsewhere.
func sysStamp(fs.FileInfo, *stamp) {}
