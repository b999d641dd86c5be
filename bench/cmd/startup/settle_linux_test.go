package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"
)

// residentPages counts the pages of file name in the page cache (mincore
// of a mapping of it).
func residentPages(t *testing.T, name string) (resident, total int) {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	pages := (len(m) + os.Getpagesize() - 1) / os.Getpagesize()
	vec := make([]byte, pages)
	if _, _, e := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	for _, v := range vec {
		resident += int(v & 1)
	}
	return resident, pages
}

// TestSettleDropsTheFile: a freshly written file is all in the page
// cache; after settle none of it is, so the first run reads it as an
// installed binary's would be.
func TestSettleDropsTheFile(t *testing.T) {
	name := filepath.Join(t.TempDir(), "bin")
	data := make([]byte, 8<<20)
	for i := range data {
		data[i] = byte(i)
	}
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if r, n := residentPages(t, name); r < n/2 {
		t.Skipf("only %d of %d pages cached right after writing: this file system does not cache as assumed", r, n)
	}
	if err := settle(name); err != nil {
		t.Fatal(err)
	}
	if r, n := residentPages(t, name); r > n/8 {
		t.Errorf("%d of %d pages still cached after settle", r, n)
	}
	if err := settle(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("settle of a missing file succeeded")
	}
}
