//go:build !unix

package sqlitefile

// noFollow: this platform has no O_NOFOLLOW; Lstat checked the type.
const noFollow = 0
