//go:build unix

package vfs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// tempMaxAge: a temporary file older than this is abandoned, whatever
	// its name says (the PID may have been reused, or the name is of an
	// older version that did not record one). A write holds its file for
	// seconds.
	tempMaxAge = time.Hour
	// sweepEvery bounds how often one process sweeps a directory.
	sweepEvery = 10 * time.Minute
	// maxSweepEntries bounds the background sweep of a workspace.
	maxSweepEntries = 500_000
)

var (
	// liveTemps holds the absolute paths of this process's temporary
	// files in flight.
	liveTemps sync.Map
	// swept records when each directory (absolute) was last swept.
	swept = struct {
		sync.Mutex
		at map[string]time.Time
	}{at: map[string]time.Time{}}
	// sweptRoots: workspaces this process has swept in the background.
	sweptRoots sync.Map

	selfPID = uint64(os.Getpid())
	// selfNS is read at the first temporary file, not at every start.
	selfNS = sync.OnceValue(pidNamespace)
)

// pidNamespace identifies this process's PID namespace (Linux: the inode
// of /proc/self/ns/pid), 0 where there is none to tell: PIDs are only
// compared within one namespace.
func pidNamespace() uint64 {
	link, err := os.Readlink("/proc/self/ns/pid") // "pid:[4026531836]"
	if err != nil {
		return 0
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(link, "pid:["), "]"), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// tempName is a new temporary name for base.
func tempName(base string) string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return fmt.Sprintf(".%s%s%d-%d-%s", base, tmpMarker, selfPID, selfNS(), hex.EncodeToString(b[:]))
}

// registerTemp marks abs as a live temporary file of this process until
// the returned function is called.
func registerTemp(abs string) (release func()) {
	liveTemps.Store(abs, struct{}{})
	return func() { liveTemps.Delete(abs) }
}

// abandoned reports whether the temporary file abs (named name, last
// modified at mtime) belongs to no live writer.
func abandoned(abs, name string, mtime, now time.Time) bool {
	owner, ok := parseTempName(name)
	switch {
	case !ok:
		return false
	case now.Sub(mtime) > tempMaxAge:
		return true
	case owner.pid == 0 || owner.ns != selfNS():
		return false // cannot tell whether its writer runs
	case owner.pid == selfPID:
		_, live := liveTemps.Load(abs)
		return !live // else a process before this one with the same PID
	}
	return !processRuns(owner.pid)
}

// processRuns: signal 0 checks for the process without touching it; EPERM
// means it runs as another user.
func processRuns(pid uint64) bool {
	err := syscall.Kill(int(pid), 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// sweepDir removes the abandoned temporary files of dir (relative to
// root), unless this process swept it within sweepEvery. Best effort.
func sweepDir(root *localRoot, dir string) {
	abs := filepath.Join(root.path, dir)
	now := time.Now()
	swept.Lock()
	if last, ok := swept.at[abs]; ok && now.Sub(last) < sweepEvery {
		swept.Unlock()
		return
	}
	if len(swept.at) >= 4096 { // forget what is due again anyway
		for d, last := range swept.at {
			if now.Sub(last) >= sweepEvery {
				delete(swept.at, d)
			}
		}
	}
	swept.at[abs] = now
	swept.Unlock()
	sweepEntries(context.Background(), root, dir, nil)
}

// sweepEntries reads dir (relative to root) and removes its abandoned
// temporary files; when subdirs is not nil it gets the subdirectories (not
// symlinks, not .git). It returns how many entries it read.
func sweepEntries(ctx context.Context, root *localRoot, dir string, subdirs *[]string) int {
	d, err := root.r.Open(dir)
	if err != nil {
		return 0
	}
	defer d.Close()
	n := 0
	for ctx.Err() == nil {
		ents, err := d.ReadDir(256)
		n += len(ents)
		for _, e := range ents {
			name := e.Name()
			switch {
			case e.Type().IsRegular() && IsTempName(name):
				rel := filepath.Join(dir, name)
				fi, err := root.r.Lstat(rel)
				if err == nil && fi.Mode().IsRegular() && abandoned(filepath.Join(root.path, rel), name, fi.ModTime(), time.Now()) {
					_ = root.r.Remove(rel)
				}
			case e.IsDir() && subdirs != nil && name != ".git":
				*subdirs = append(*subdirs, filepath.Join(dir, name))
			}
		}
		if err != nil { // io.EOF at the end
			if !errors.Is(err, io.EOF) {
				return n
			}
			break
		}
	}
	return n
}

// sweepTree sweeps the whole workspace in the background, once per
// process. stop ends the sweep and waits for it; done is closed when it
// has finished.
func sweepTree(root *localRoot) (stop func(), done <-chan struct{}) {
	finished := make(chan struct{})
	if _, dup := sweptRoots.LoadOrStore(root.path, struct{}{}); dup {
		close(finished)
		return func() {}, finished
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(finished)
		dirs, seen := []string{"."}, 0
		for len(dirs) > 0 && ctx.Err() == nil && seen < maxSweepEntries {
			dir := dirs[len(dirs)-1]
			dirs = dirs[:len(dirs)-1]
			seen += sweepEntries(ctx, root, dir, &dirs)
		}
	}()
	return func() {
		cancel()
		<-finished
	}, finished
}
