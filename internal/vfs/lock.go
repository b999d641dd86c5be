package vfs

import "sync"

// writeLocks serialises writers of one file across the whole process: two
// sessions, or eight parallel Edits, that write the same canonical path queue
// here, so the final staleness check and the rename are one step.
var writeLocks = keyedMutex{m: map[string]*keyedEntry{}}

// keyedMutex is a map of mutexes that frees an entry when its last user
// unlocks, so it does not grow with every path ever written.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*keyedEntry
}

type keyedEntry struct {
	mu   sync.Mutex
	refs int
}

// lock locks key and returns its unlock function.
func (k *keyedMutex) lock(key string) (unlock func()) {
	k.mu.Lock()
	e := k.m[key]
	if e == nil {
		e = &keyedEntry{}
		k.m[key] = e
	}
	e.refs++
	k.mu.Unlock()

	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		e.refs--
		if e.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}

// LockPath takes the process-wide write lock of the canonical path p, the
// one Local.WriteFile holds from its first stat to the rename, and returns
// its unlock function. Another FS that writes files Local also writes (an
// editor overlay) takes it so its writers and Local's serialise. Do not
// call Local.WriteFile on p while holding it.
func LockPath(p string) (unlock func()) { return writeLocks.lock(p) }
