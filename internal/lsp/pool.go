package lsp

import (
	"encoding/json"
	"log/slog"
	"sync"
)

// pool shares a Manager between the sessions of one workspace (and one
// Config) in this process, so that two sessions on a project run one
// gopls, not two.
var pool = struct {
	mu sync.Mutex
	m  map[string]*shared
}{m: map[string]*shared{}}

type shared struct {
	mgr  *Manager
	refs int
}

// Acquire returns the Manager of the workspace at root with cfg, shared
// with the other holders of the same root and Config, and the function
// that releases this hold: the last release closes the Manager (its
// servers stop). Release is idempotent.
func Acquire(root string, cfg Config, log *slog.Logger) (*Manager, func()) {
	b, err := json.Marshal(cfg)
	if err != nil { // a Config always marshals; stay unshared if not
		m := NewManager(root, cfg, log)
		return m, m.Close
	}
	key := root + "\x00" + string(b)
	pool.mu.Lock()
	s := pool.m[key]
	if s == nil {
		s = &shared{mgr: NewManager(root, cfg, log)}
		pool.m[key] = s
	}
	s.refs++
	pool.mu.Unlock()
	var once sync.Once
	return s.mgr, func() {
		once.Do(func() {
			pool.mu.Lock()
			s.refs--
			last := s.refs == 0
			if last {
				delete(pool.m, key)
			}
			pool.mu.Unlock()
			if last {
				s.mgr.Close()
			}
		})
	}
}
