package script

import (
	"io/fs"
	"syscall"
	"time"
)

// sysStamp adds what fs.FileInfo does not carry: inode and ctime.
func sysStamp(fi fs.FileInfo, st *stamp) {
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.inode = sys.Ino
		st.ctime = time.Unix(sys.Ctim.Unix())
	}
}
