package search

import (
	"context"
	"errors"
	"sync"
)

// Queries runs the searches of one picker (one session's @ popup): at most
// one at a time, newest wins.
//
//   - Submit cancels the search in flight, if any, and starts the new one.
//   - Cancel stops the search with that query id (Esc, or the @ deleted).
//   - An answer is delivered only if its query is still the newest when it
//     finishes, and deliveries happen in submission order under one lock,
//     so an answer to a superseded query is never sent after a newer one.
type Queries[Req, Resp any] struct {
	run     func(ctx context.Context, req Req) (Resp, error)
	deliver func(req Req, resp Resp, err error)

	mu     sync.Mutex
	seq    uint64
	cur    *queryJob
	wg     sync.WaitGroup
	closed bool
}

type queryJob struct {
	seq    uint64
	id     string
	cancel context.CancelFunc
	done   chan struct{}
}

// ErrSuperseded is the cause of a search's context when a newer query or a
// cancel stopped it.
var ErrSuperseded = errors.New("search superseded")

// NewQueries returns a runner. run does the search and must return promptly
// when its context is cancelled; deliver sends an answer (or error) out and
// is never called for a superseded or cancelled query.
func NewQueries[Req, Resp any](run func(context.Context, Req) (Resp, error), deliver func(Req, Resp, error)) *Queries[Req, Resp] {
	return &Queries[Req, Resp]{run: run, deliver: deliver}
}

// Submit starts the search for req (identified by id), superseding any
// search in flight.
func (q *Queries[Req, Resp]) Submit(ctx context.Context, id string, req Req) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	if q.cur != nil {
		q.cur.cancel()
	}
	q.seq++
	ctx, cancel := context.WithCancelCause(ctx)
	job := &queryJob{seq: q.seq, id: id, cancel: func() { cancel(ErrSuperseded) }, done: make(chan struct{})}
	q.cur = job
	q.wg.Add(1)
	go func() {
		defer q.wg.Done()
		defer close(job.done)
		defer cancel(nil)
		resp, err := q.run(ctx, req)
		q.mu.Lock()
		defer q.mu.Unlock()
		// Only the newest, uncancelled query is answered; the check and
		// the delivery share the lock with Submit, so no newer answer can
		// go out in between.
		if q.cur != job || ctx.Err() != nil {
			return
		}
		q.cur = nil
		q.deliver(req, resp, err)
	}()
}

// Cancel stops the search with query id, if it is the one in flight, and
// reports whether it was. Its answer is never delivered.
func (q *Queries[Req, Resp]) Cancel(id string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.cur == nil || q.cur.id != id {
		return false
	}
	q.cur.cancel()
	q.cur = nil
	return true
}

// Idle waits until no search is running (for tests and shutdown).
func (q *Queries[Req, Resp]) Idle() { q.wg.Wait() }

// Close cancels what runs and refuses new searches.
func (q *Queries[Req, Resp]) Close() {
	q.mu.Lock()
	q.closed = true
	if q.cur != nil {
		q.cur.cancel()
		q.cur = nil
	}
	q.mu.Unlock()
	q.wg.Wait()
}
