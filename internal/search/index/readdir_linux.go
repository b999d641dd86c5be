package index

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

var direntBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// readDirents reads a directory with getdents64 straight into dirents:
// one allocation for the entries and one for all their names, where
// os.ReadDir makes one per entry.
func readDirents(name string, b *dirBatch) ([]dirent, error) {
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	bufp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bufp)
	buf := *bufp
	var (
		names []byte
		ents  []dirent
		ends  []int
		types []uint8
	)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "getdents", Path: name, Err: err}
		}
		if n <= 0 {
			break
		}
		if names == nil {
			// Room for this buffer's worth (records are at least 24
			// bytes, names shorter than their records).
			names = make([]byte, 0, n)
			ends = make([]int, 0, n/24)
			types = make([]uint8, 0, n/24)
		}
		for off := 0; off < n; {
			// struct linux_dirent64: ino u64, off s64, reclen u16,
			// type u8, name NUL-terminated.
			if off+19 > n {
				return nil, fmt.Errorf("getdents %s: short record", name)
			}
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			if reclen == 0 || off+reclen > n {
				return nil, fmt.Errorf("getdents %s: bad record length", name)
			}
			nm := buf[off+19 : off+reclen]
			for i, c := range nm {
				if c == 0 {
					nm = nm[:i]
					break
				}
			}
			typ := buf[off+18]
			off += reclen
			if len(nm) == 0 || string(nm) == "." || string(nm) == ".." {
				continue
			}
			names = append(names, nm...)
			ends = append(ends, len(names))
			types = append(types, typ)
		}
	}
	all := string(names)
	ents = make([]dirent, len(ends))
	start := 0
	for i, end := range ends {
		e := &ents[i]
		e.name, e.batch = all[start:end], b
		start = end
		switch types[i] {
		case unix.DT_REG:
		case unix.DT_DIR:
			e.typ = fs.ModeDir
		case unix.DT_LNK:
			e.typ = fs.ModeSymlink
		case unix.DT_FIFO:
			e.typ = fs.ModeNamedPipe
		case unix.DT_SOCK:
			e.typ = fs.ModeSocket
		case unix.DT_CHR:
			e.typ = fs.ModeDevice | fs.ModeCharDevice
		case unix.DT_BLK:
			e.typ = fs.ModeDevice
		default: // DT_UNKNOWN: the file system does not say; ask
			fi, err := os.Lstat(name + "/" + e.name)
			if err != nil {
				e.typ = fs.ModeIrregular
				continue
			}
			e.typ = fi.Mode().Type()
		}
	}
	return ents, nil
}
