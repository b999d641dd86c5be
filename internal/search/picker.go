package search

import (
	"context"
	"sync"

	"github.com/ferry-dev/ferry/protocol"
)

// Picker is the search side of one session's @ popup: it runs the
// session's control.file.search requests newest-wins (see Queries) and
// narrows the previous result set when the user types one more character.
type Picker struct {
	svc       *Service
	workspace string
	queries   *Queries[*protocol.FileSearch, *protocol.FileCandidates]

	mu   sync.Mutex
	last *narrowing
}

// NewPicker returns the picker of a session on workspace. deliver sends an
// answer (or a coded error) to the master; it is never called for a
// superseded or cancelled query, and answers arrive in request order.
func NewPicker(svc *Service, workspace string, deliver func(req *protocol.FileSearch, resp *protocol.FileCandidates, err error)) *Picker {
	p := &Picker{svc: svc, workspace: workspace}
	p.queries = NewQueries(p.run, deliver)
	return p
}

func (p *Picker) run(ctx context.Context, req *protocol.FileSearch) (*protocol.FileCandidates, error) {
	p.mu.Lock()
	prev := p.last
	p.mu.Unlock()
	resp, next, err := p.svc.search(ctx, p.workspace, req, prev)
	if err == nil && ctx.Err() == nil {
		p.mu.Lock()
		p.last = next
		p.mu.Unlock()
	}
	return resp, err
}

// Search starts req, superseding the search in flight.
func (p *Picker) Search(ctx context.Context, req *protocol.FileSearch) {
	p.queries.Submit(ctx, req.QueryID, req)
}

// Cancel stops the search with queryID (control.file.search.cancel).
func (p *Picker) Cancel(queryID string) bool { return p.queries.Cancel(queryID) }

// Idle waits until no search runs.
func (p *Picker) Idle() { p.queries.Idle() }

// Close stops the picker.
func (p *Picker) Close() { p.queries.Close() }

// SearchOnce answers one request directly, without a picker (ferry search).
func (s *Service) SearchOnce(ctx context.Context, workspace string, req *protocol.FileSearch) (*protocol.FileCandidates, error) {
	resp, _, err := s.search(ctx, workspace, req, nil)
	return resp, err
}
