package master

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/ferry-dev/ferry/internal/push"
	"github.com/ferry-dev/ferry/internal/runecut"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// vapidKeyName is the store secret holding the VAPID private key that
// every master node signs with (so a browser subscribed through one node
// accepts notifications from any).
const vapidKeyName = "push-vapid-key"

// focusTopic carries every node's ui.focus changes, so that the node that
// stores an event knows the focus of UI connections on every node.
const focusTopic = "push.focus"

// DefaultFocusRefresh is how often a node repeats the focus of its UI
// connections on focusTopic; another node forgets a focus it has not
// heard for three of these (a node that died says nothing more).
const DefaultFocusRefresh = 30 * time.Second

// maxRemoteFocus bounds the focus notes kept from other nodes.
const maxRemoteFocus = 10000

// notifyQueue bounds the notifications waiting for the notifier: the
// session writers hand them over without waiting, and drop them when it
// is full.
const notifyQueue = 256

// Bounds of what a notification carries.
const (
	maxNotifyTitle = 80
	maxNotifyBody  = 160
	maxNotifyErrs  = 1024
)

// Notification kinds, the payload's kind.
const (
	notifyPermission = "permission"
	notifyQuestion   = "question"
	notifyDone       = "done"
	notifyFailed     = "failed"
)

// notifyPayload is what a service worker's push event gets: small, no
// file content, no tool input beyond the tool's name and a file's base
// name, nothing secret.
type notifyPayload struct {
	Kind          string `json:"kind"`
	SessionID     string `json:"session_id"`
	SessionTitle  string `json:"session_title"`
	Tool          string `json:"tool,omitempty"`
	File          string `json:"file,omitempty"`
	InteractionID string `json:"interaction_id,omitempty"`
	Body          string `json:"body"`
	URL           string `json:"url"`
}

// notifyJob is one notification to send to every subscription that may
// see the session's machine.
type notifyJob struct {
	machineID string
	n         push.Notification
}

// focusNote is one UI connection's focus as published on focusTopic.
type focusNote struct {
	Node    string `json:"node"`
	Conn    string `json:"conn"`
	Session string `json:"session,omitempty"`
	Focused bool   `json:"focused,omitempty"`
	// Gone: the connection closed.
	Gone bool `json:"gone,omitempty"`
}

// remoteFocus is another node's connection's focus, and when it was heard.
type remoteFocus struct {
	session string
	focused bool
	seen    time.Time
}

// notifier decides which session events become Web Push notifications
// and hands them to the sender. Focus is what UI connections last said
// (ui.focus): this node's own, and those other nodes publish on
// focusTopic; a notification is skipped while any of them shows the
// session focused.
type notifier struct {
	m       *Master
	sender  push.Sender
	owned   bool // sender was made here: closed at Shutdown
	q       chan notifyJob
	done    chan struct{}
	node    string // this node's name on focusTopic
	refresh time.Duration
	unsub   func()
	stop    chan struct{}
	stopped chan struct{}

	mu     sync.Mutex
	closed bool // q is closed
	focus  map[*conn]protocol.UIFocus
	remote map[string]remoteFocus // by connection id, other nodes' only
	// errs keeps a session's last agent.error message until its turn
	// ends, so that a failed turn's notification says why.
	errs map[string]string
}

// newNotifier starts the notifier on cfg.Push, or on a push.Service
// signing with the VAPID key the master nodes share.
func newNotifier(ctx context.Context, m *Master, cfg Config) (*notifier, error) {
	n := &notifier{m: m, sender: cfg.Push, q: make(chan notifyJob, notifyQueue), done: make(chan struct{}),
		node: newEpoch(), refresh: cfg.FocusRefresh, stop: make(chan struct{}), stopped: make(chan struct{}),
		focus: map[*conn]protocol.UIFocus{}, remote: map[string]remoteFocus{}, errs: map[string]string{}}
	if n.refresh <= 0 {
		n.refresh = DefaultFocusRefresh
	}
	if n.sender == nil {
		fresh, err := push.NewPrivateKey()
		if err != nil {
			return nil, fmt.Errorf("master: %w", err)
		}
		key, err := cfg.Store.Secret(ctx, vapidKeyName, fresh)
		if err != nil {
			return nil, fmt.Errorf("master: VAPID key: %w", err)
		}
		svc, err := push.New(push.Config{PrivateKey: key, Contact: cfg.PushContact, AllowLoopback: cfg.PushAllowLoopback,
			Logger: cfg.Logger, Gone: func(ctx context.Context, endpoint string) {
				if err := cfg.Store.DeletePushSubscription(ctx, endpoint, ""); err != nil {
					m.log.Info("deleting a gone push subscription", "err", err)
				}
			}})
		if err != nil {
			return nil, fmt.Errorf("master: %w", err)
		}
		n.sender, n.owned = svc, true
	}
	unsub, err := m.br.Subscribe(focusTopic, n.onNote)
	if err != nil {
		if n.owned {
			_ = n.sender.Close(ctx)
		}
		return nil, fmt.Errorf("master: subscribe to focus: %w", err)
	}
	n.unsub = unsub
	go n.run()
	go n.repeat()
	return n, nil
}

// close stops the notifier (and the sender it made).
func (n *notifier) close(ctx context.Context) {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	close(n.q)
	n.mu.Unlock()
	close(n.stop)
	<-n.stopped
	n.unsub()
	<-n.done
	if n.owned {
		if err := n.sender.Close(ctx); err != nil {
			n.m.log.Info("push sender did not stop in time", "err", err)
		}
	}
}

// setFocus records a UI connection's ui.focus and tells the other nodes.
func (n *notifier) setFocus(c *conn, f protocol.UIFocus) {
	n.mu.Lock()
	n.focus[c] = f
	n.mu.Unlock()
	n.publish(focusNote{Node: n.node, Conn: c.id, Session: f.SessionID, Focused: f.Focused})
}

// forget drops a closed connection's focus, here and on the other nodes.
func (n *notifier) forget(c *conn) {
	n.mu.Lock()
	_, had := n.focus[c]
	delete(n.focus, c)
	n.mu.Unlock()
	if had {
		n.publish(focusNote{Node: n.node, Conn: c.id, Gone: true})
	}
}

func (n *notifier) publish(f focusNote) {
	b, err := json.Marshal(f)
	if err != nil {
		return
	}
	if err := n.m.br.Publish(n.m.ctx, focusTopic, b); err != nil {
		n.m.log.Info("publish focus", "err", err)
	}
}

// onNote records another node's focus note (never blocking: a map).
func (n *notifier) onNote(data []byte) {
	var f focusNote
	if err := json.Unmarshal(data, &f); err != nil || f.Node == n.node || f.Conn == "" {
		return
	}
	now := time.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	if f.Gone {
		delete(n.remote, f.Conn)
		return
	}
	if len(n.remote) >= maxRemoteFocus {
		n.pruneLocked(now)
		if len(n.remote) >= maxRemoteFocus {
			return // a focus not known only costs a notification
		}
	}
	n.remote[f.Conn] = remoteFocus{session: f.Session, focused: f.Focused, seen: now}
}

func (n *notifier) pruneLocked(now time.Time) {
	for id, r := range n.remote {
		if now.Sub(r.seen) > 3*n.refresh {
			delete(n.remote, id)
		}
	}
}

// repeat publishes this node's focus every refresh, so that the other
// nodes keep it, and forgets the other nodes' notes gone stale.
func (n *notifier) repeat() {
	defer close(n.stopped)
	t := time.NewTicker(n.refresh)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		n.mu.Lock()
		notes := make([]focusNote, 0, len(n.focus))
		for c, f := range n.focus {
			notes = append(notes, focusNote{Node: n.node, Conn: c.id, Session: f.SessionID, Focused: f.Focused})
		}
		n.pruneLocked(time.Now())
		n.mu.Unlock()
		for _, f := range notes {
			n.publish(f)
		}
	}
}

// watched reports whether a UI connection, of this node or another one
// heard from lately, shows the session focused.
func (n *notifier) watched(sessionID string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, f := range n.focus {
		if f.Focused && f.SessionID == sessionID {
			return true
		}
	}
	now := time.Now()
	for _, r := range n.remote {
		if r.focused && r.session == sessionID && now.Sub(r.seen) <= 3*n.refresh {
			return true
		}
	}
	return false
}

// observe runs on the session's writer for every newly stored event: it
// never blocks (the queue drops when full) and reads nothing from the
// store.
func (n *notifier) observe(s *session, msg *protocol.Message) {
	p := notifyPayload{SessionID: s.id}
	var nt push.Notification
	switch ev := msg.Payload.(type) {
	case *protocol.AgentError:
		n.mu.Lock()
		if len(n.errs) >= maxNotifyErrs {
			clear(n.errs)
		}
		n.errs[s.id] = ev.Message
		n.mu.Unlock()
		return
	case *protocol.InteractionRequest:
		p.InteractionID = ev.InteractionID
		nt.Urgency = push.UrgencyHigh
		nt.TTL = time.Hour
		if ev.TimeoutMS > 0 {
			nt.TTL = min(nt.TTL, time.Duration(ev.TimeoutMS)*time.Millisecond)
		}
		if ev.Kind == protocol.InteractionPermission {
			p.Kind, p.Tool, p.File = notifyPermission, ev.ToolName, fileOf(ev)
			p.Body = "Allow " + orDefault(p.Tool, "a tool")
			if p.File != "" {
				p.Body += " on " + p.File
			}
			p.Body += "?"
		} else {
			p.Kind, p.Body = notifyQuestion, ev.Title
		}
	case *protocol.TextDone:
		n.mu.Lock()
		why := n.errs[s.id]
		delete(n.errs, s.id)
		n.mu.Unlock()
		switch {
		case ev.IsCancelled || ev.StopReason == protocol.StopCancelled:
			return // the user cancelled it: they know
		case ev.StopReason == protocol.StopError:
			p.Kind, p.Body = notifyFailed, "The turn failed"
			if why != "" {
				p.Body += ": " + why
			}
		default:
			p.Kind, p.Body = notifyDone, "The agent finished its turn."
		}
		nt.Urgency, nt.TTL = push.UrgencyNormal, 24*time.Hour
	default:
		return
	}
	if n.watched(s.id) {
		return
	}
	s.mu.Lock()
	p.SessionTitle = s.row.Title
	s.mu.Unlock()
	p.SessionTitle = runecut.Prefix(p.SessionTitle, maxNotifyTitle)
	p.Tool = runecut.Prefix(p.Tool, maxNotifyTitle)
	p.File = runecut.Prefix(p.File, maxNotifyTitle)
	p.Body = runecut.Prefix(p.Body, maxNotifyBody)
	p.URL = "/#/s/" + url.PathEscape(s.id)
	b, err := json.Marshal(p)
	if err != nil {
		return
	}
	nt.Payload = b
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	select {
	case n.q <- notifyJob{machineID: s.machineID, n: nt}:
	default:
		n.m.log.Warn("notification queue full; notification dropped", "session", s.id)
	}
}

// run hands each queued notification to the sender, once per
// subscription whose owner may see the session's machine.
func (n *notifier) run() {
	defer close(n.done)
	for j := range n.q {
		n.send(j)
	}
}

func (n *notifier) send(j notifyJob) {
	ctx, cancel := context.WithTimeout(n.m.ctx, 30*time.Second)
	defer cancel()
	subs, err := n.m.st.PushSubscriptions(ctx, time.Now())
	if err != nil {
		n.m.log.Warn("listing push subscriptions failed; notification dropped", "err", err)
		return
	}
	if len(subs) == 0 {
		return
	}
	toks, err := n.m.st.ListTokens(ctx)
	if err != nil {
		n.m.log.Warn("listing tokens failed; notification dropped", "err", err)
		return
	}
	scope := make(map[string][]string, len(toks))
	for _, t := range toks {
		if t.Kind == store.TokenUI {
			scope[t.ID] = t.Machines
		}
	}
	for _, s := range subs {
		machines, ok := scope[s.OwnerID]
		if !ok || len(machines) > 0 && !contains(machines, j.machineID) {
			continue // the owner may not see this machine's sessions
		}
		n.sender.Send(push.Subscription{Endpoint: s.Endpoint, P256dh: s.P256dh, Auth: s.Auth}, j.n)
	}
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// fileOf is the base name of the file a permission is about: its diff's
// path, or the tool input's file_path, path or notebook_path.
func fileOf(r *protocol.InteractionRequest) string {
	p := ""
	if r.Diff != nil {
		p = r.Diff.Path
	}
	if p == "" && len(r.ToolInput) > 0 {
		var in struct {
			FilePath     string `json:"file_path"`
			Path         string `json:"path"`
			NotebookPath string `json:"notebook_path"`
		}
		if json.Unmarshal(r.ToolInput, &in) == nil {
			p = in.FilePath
			if p == "" {
				p = in.Path
			}
			if p == "" {
				p = in.NotebookPath
			}
		}
	}
	if p == "" {
		return ""
	}
	return path.Base(strings.ReplaceAll(p, `\`, "/"))
}
