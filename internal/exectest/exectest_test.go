package exectest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// Scripts written while other goroutines fork must all run: without the
// fork lock some start fails with "text file busy" (it did in CI).
func TestWriteScriptWhileForking(t *testing.T) {
	if _, err := exec.LookPath("true"); err != nil {
		t.Skip("needs the true command (apt-get install coreutils)")
	}
	dir := t.TempDir()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 { // forkers: every fork inherits whatever fds are open
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = exec.Command("true").Run()
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	for i := range 300 {
		p := filepath.Join(dir, "s"+strconv.Itoa(i))
		WriteScript(t, p, "#!/bin/sh\nexit 0\n")
		if out, err := exec.Command(p).CombinedOutput(); err != nil {
			t.Fatalf("script %d: %v %s", i, err, out)
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o755 {
			t.Fatalf("script %d: %v %v", i, fi, err)
		}
	}
}
