package vfs

import (
	"io/fs"
	"syscall"
	"time"
)

// sysStamp reads what fs.FileInfo does not carry: ctime, inode, device and
// the link count.
func sysStamp(fi fs.FileInfo) (Stamp, uint64) {
	s := Stamp{Size: fi.Size(), ModTime: fi.ModTime()}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return s, 1
	}
	s.ChangeTime = time.Unix(st.Ctim.Unix())
	s.Inode = u64(st.Ino)
	s.Device = u64(st.Dev)
	return s, u64(st.Nlink)
}

// owner returns the uid and gid of fi.
func owner(fi fs.FileInfo) (uid, gid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}

// u64 widens the per-architecture field types of Stat_t without a
// conversion that is redundant on one architecture and needed on another.
func u64[T ~uint16 | ~uint32 | ~uint64 | ~int32 | ~int64](v T) uint64 { return uint64(v) }
