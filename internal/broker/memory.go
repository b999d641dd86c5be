package broker

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
)

// Memory is the in-process broker, the default of a single master node.
// Publish delivers synchronously in the publisher's goroutine, which gives
// per-publisher ordering for free; subscriber lists are copied on write so
// Publish holds no lock while it delivers.
type Memory struct {
	mu     sync.RWMutex
	topics map[string][]*memSub
	closed bool
}

var _ Broker = (*Memory)(nil)

type memSub struct {
	deliver func([]byte)
	dead    atomic.Bool
}

// NewMemory returns an empty in-process broker.
func NewMemory() *Memory {
	return &Memory{topics: make(map[string][]*memSub)}
}

// Publish implements Broker.
func (m *Memory) Publish(ctx context.Context, topic string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.RLock()
	if m.closed {
		m.mu.RUnlock()
		return ErrClosed
	}
	subs := m.topics[topic] // never modified in place: see Subscribe
	m.mu.RUnlock()
	for _, s := range subs {
		if !s.dead.Load() {
			s.deliver(data)
		}
	}
	return nil
}

// Subscribe implements Broker.
func (m *Memory) Subscribe(topic string, deliver func(data []byte)) (func(), error) {
	s := &memSub{deliver: deliver}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	old := m.topics[topic]
	subs := make([]*memSub, len(old), len(old)+1)
	copy(subs, old)
	m.topics[topic] = append(subs, s)
	var once sync.Once
	return func() { once.Do(func() { m.unsubscribe(topic, s) }) }, nil
}

func (m *Memory) unsubscribe(topic string, s *memSub) {
	s.dead.Store(true)
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.topics[topic]
	i := slices.Index(old, s)
	if i < 0 {
		return
	}
	if len(old) == 1 {
		delete(m.topics, topic)
		return
	}
	subs := make([]*memSub, 0, len(old)-1)
	subs = append(subs, old[:i]...)
	m.topics[topic] = append(subs, old[i+1:]...)
}

// Close implements Broker.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, subs := range m.topics {
		for _, s := range subs {
			s.dead.Store(true)
		}
	}
	m.topics = nil
	m.closed = true
	return nil
}
