//go:build unix

package client

import (
	"encoding/binary"
	"os"
	"syscall"
)

// openReadFlags opens a download's file. O_NONBLOCK keeps a FIFO swapped in
// for the file from blocking the open (it is then refused as not regular);
// it changes nothing for a regular file.
const openReadFlags = os.O_RDONLY | syscall.O_NONBLOCK

// fileIdentity is the device and inode of fi: a file replaced by another
// (a rename over it, as an atomic write does) gets another identity.
func fileIdentity(fi os.FileInfo) []byte {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	var b []byte
	b = binary.BigEndian.AppendUint64(b, uint64(st.Dev)) //nolint:unconvert // Dev's type differs between platforms
	b = binary.BigEndian.AppendUint64(b, st.Ino)
	return b
}

// linkCount is the number of hard links of fi.
func linkCount(fi os.FileInfo) uint64 {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 1
	}
	return uint64(st.Nlink) //nolint:unconvert // Nlink's type differs between platforms
}
