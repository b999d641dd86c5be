package upload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/ferry-dev/ferry/protocol"
)

// slots bounds the uploads read at once, in all and per owner (UI token),
// so that neither many uploaders nor one can take every slot.
type slots struct {
	total, perOwner int

	mu      sync.Mutex
	used    int
	byOwner map[string]int
	freed   chan struct{} // closed, and replaced, whenever a slot frees
}

func newSlots(total, perOwner int) *slots {
	return &slots{total: total, perOwner: perOwner, byOwner: map[string]int{}, freed: make(chan struct{})}
}

// acquire takes a slot for owner, waiting at most wait for one; it
// returns the function that gives it back, or a busy *Error that says
// which bound was reached.
func (sl *slots) acquire(ctx context.Context, owner string, wait time.Duration) (func(), error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		sl.mu.Lock()
		ownerFull := sl.byOwner[owner] >= sl.perOwner
		if !ownerFull && sl.used < sl.total {
			sl.used++
			sl.byOwner[owner]++
			sl.mu.Unlock()
			return sync.OnceFunc(func() { sl.release(owner) }), nil
		}
		freed := sl.freed
		sl.mu.Unlock()
		select {
		case <-freed:
		case <-timer.C:
			if ownerFull {
				return nil, busy(fmt.Sprintf("this login already sends %d uploads at once; try again when one is done", sl.perOwner))
			}
			return nil, busy(fmt.Sprintf("the master already receives %d uploads at once; try again shortly", sl.total))
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for an upload slot: %w", ctx.Err())
		}
	}
}

func (sl *slots) release(owner string) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.used--
	if sl.byOwner[owner]--; sl.byOwner[owner] <= 0 {
		delete(sl.byOwner, owner)
	}
	close(sl.freed)
	sl.freed = make(chan struct{})
}

// busy is the answer to an upload that found no slot in time.
func busy(msg string) *Error {
	e := refuse(http.StatusServiceUnavailable, protocol.CodeBusy, "", msg)
	e.RetryAfter = retryAfter
	return e
}

// pacedBody reads a request body while it holds a slot: every window must
// bring at least need bytes (or the body's end), and the whole body must
// arrive by end. Both are the connection's read deadline, moved on as
// bytes arrive, so that a Read on a stalled connection returns; cut then
// says which bound passed.
type pacedBody struct {
	body   io.ReadCloser
	rc     *http.ResponseController
	end    time.Time // the whole body's deadline
	window time.Duration
	need   int64     // bytes each window must bring
	got    int64     // bytes in this window so far
	winEnd time.Time // this window's end
	cut    *Error
	s      *Service
}

// pace starts the bounds on body (the request's, answered through w).
func (s *Service) pace(w http.ResponseWriter, body io.ReadCloser) (*pacedBody, error) {
	now := time.Now()
	p := &pacedBody{body: body, rc: http.NewResponseController(w), end: now.Add(s.cfg.BodyTimeout),
		window: s.cfg.RateWindow, need: max(1, s.cfg.MinRate*int64(s.cfg.RateWindow)/int64(time.Second)),
		winEnd: now.Add(s.cfg.RateWindow), s: s}
	// Without a deadline a stalled peer would hold its slot for ever:
	// refuse to read rather than read unbounded.
	if err := p.rc.SetReadDeadline(p.deadline()); err != nil {
		return nil, fmt.Errorf("bound the upload's body: %w", err)
	}
	return p, nil
}

func (p *pacedBody) deadline() time.Time {
	if p.winEnd.Before(p.end) {
		return p.winEnd
	}
	return p.end
}

func (p *pacedBody) Read(b []byte) (int, error) {
	n, err := p.body.Read(b)
	p.got += int64(n)
	now := time.Now()
	if err == nil && p.got >= p.need {
		p.got, p.winEnd = 0, now.Add(p.window)
		if derr := p.rc.SetReadDeadline(p.deadline()); derr != nil {
			return n, fmt.Errorf("move the upload's read deadline: %w", derr)
		}
	}
	switch {
	case errors.Is(err, io.EOF):
		// The server starts its own read of the connection at the body's
		// end (to see the peer close): it must not meet this deadline.
		p.finish()
	case err != nil && !now.Before(p.deadline()):
		p.cut = p.s.tooSlow(!now.Before(p.end))
	}
	return n, err
}

func (p *pacedBody) Close() error { return p.body.Close() }

// finish lifts the deadline once the body is read: the server's own
// reads (for the peer closing, for the next request) must not meet it,
// or the request's context would end while the upload is stored.
func (p *pacedBody) finish() { _ = p.rc.SetReadDeadline(time.Time{}) }

// tooSlow is the answer to a body cut by its bounds: past the whole
// body's deadline (whole), or slower than the minimum rate.
func (s *Service) tooSlow(whole bool) *Error {
	msg := fmt.Sprintf("the file arrived slower than %s a second over %s; the master stopped reading it",
		size(s.cfg.MinRate), s.cfg.RateWindow)
	if whole {
		msg = fmt.Sprintf("the file took longer than %s to arrive; the master stopped reading it", s.cfg.BodyTimeout)
	}
	return refuse(http.StatusRequestTimeout, protocol.CodeInvalidValue, "file", msg)
}
