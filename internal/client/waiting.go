package client

import (
	"slices"

	"github.com/ferry-dev/ferry/protocol"
)

// Interactions the agent waits on. The master sends an answer (or a
// timeout) at most once: one sent while the connection was dying, or lost
// between master nodes (a broker gap), is lost, and the agent would wait
// for ever. So each session keeps the ids of the interaction requests it
// sent that are not settled yet, and on every (re)connection, and again
// after every ping answered, the client lists them
// (session.interactions.waiting); the master sends again the settlement of
// each one it has settled.

// waitingOn records an interaction request the adapter sent.
func (s *session) waitingOn(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiting == nil {
		s.waiting = map[string]struct{}{}
	}
	s.waiting[id] = struct{}{}
}

// settled forgets an interaction once its answer or timeout reached the
// adapter (or the adapter no longer knows it).
func (s *session) settled(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.waiting, id)
}

// waitingIDs lists the interactions the session waits on, sorted.
func (s *session) waitingIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.waiting))
	for id := range s.waiting {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// sendWaiting tells the master, per session, which interactions are still
// waited on; it runs once a connection is registered, then every ping
// interval.
func (c *Client) sendWaiting() {
	c.mu.Lock()
	sessions := make([]*session, 0, len(c.sessions))
	for _, s := range c.sessions {
		sessions = append(sessions, s)
	}
	c.mu.Unlock()
	for _, s := range sessions {
		for ids := range slices.Chunk(s.waitingIDs(), protocol.MaxInteractionsWaiting) {
			m := protocol.New(protocol.TypeInteractionsWaiting, &protocol.InteractionsWaiting{InteractionIDs: ids})
			m.SessionID = s.id
			c.sendDirect(m)
		}
	}
}
