package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/attachment"
	"github.com/ferry-dev/ferry/internal/forge"
	"github.com/ferry-dev/ferry/internal/ignore"
	"github.com/ferry-dev/ferry/internal/search"
	"github.com/ferry-dev/ferry/internal/search/index"
	"github.com/ferry-dev/ferry/internal/transcript"
	"github.com/ferry-dev/ferry/internal/version"
	"github.com/ferry-dev/ferry/protocol"
)

// Defaults for Config.
const (
	DefaultMinBackoff   = 200 * time.Millisecond
	DefaultMaxBackoff   = 30 * time.Second
	DefaultStableAfter  = 30 * time.Second
	DefaultOutboxLimit  = 100000
	DefaultPingInterval = 15 * time.Second
)

// ClientName is the client software's name in session.capabilities.
const ClientName = "ferry"

// ErrUnauthorized is returned by Run when the master refuses the token:
// unknown, revoked or expired (HTTP 401 at dial, or a connection closed
// because its token was revoked). Retrying cannot fix it.
var ErrUnauthorized = errors.New("client: the master refused the token (revoked, unknown or expired)")

// ErrMachineTaken is returned by Run when the master refuses the machine
// because it is registered with another client token that is still
// valid. Retrying cannot fix it either: that token must be revoked first.
var ErrMachineTaken = errors.New("client: the master refused this machine: it is registered with another client token")

// ErrClosed is returned by Run after Close.
var ErrClosed = errors.New("client: closed")

// Config configures a Client. MasterURL, Token and Workspaces are required.
type Config struct {
	// MasterURL is the http(s):// or ws(s):// base URL of the master; the
	// client dials <base>/v1/client.
	MasterURL string
	// Token is the client token, sent as Authorization: Bearer.
	Token string
	// HTTPClient dials the master; default http.DefaultClient. ferry up
	// sets one that reaches its own TLS listener on loopback and trusts
	// only the certificate it serves.
	HTTPClient *http.Client
	// Workspaces are the directories served (made absolute, symlinks
	// resolved; each must exist).
	Workspaces []string
	// StateDir holds the machine id, the outbox, the artifact log and its
	// snapshots, and the built-in agent's transcripts (transcripts.db); default
	// $XDG_STATE_HOME/ferry/client (or ~/.local/state/ferry/client).
	StateDir string
	// MachineName is shown to people; New fails when it breaks
	// protocol.CheckName (an invisible or bidirectional character). Default
	// os.Hostname().
	MachineName string
	// Adapters the client runs; at least one is required.
	Adapters []adapter.Adapter
	// Logger receives the client's log; default slog.Default().
	Logger *slog.Logger
	// MinBackoff and MaxBackoff bound the reconnect delay, which doubles
	// after every failed attempt (with jitter); defaults DefaultMinBackoff
	// and DefaultMaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// StableAfter is how long a connection must stay registered before its
	// loss starts the backoff over from MinBackoff; default
	// DefaultStableAfter. A master that accepts and then drops the client
	// at once must not make it retry in a tight loop.
	StableAfter time.Duration
	// OutboxLimit is the most unacknowledged messages kept on disk; default
	// DefaultOutboxLimit. When it is reached, Emit blocks until an ack.
	OutboxLimit int
	// PingInterval is the time between pings; a pong must come within one
	// more interval. Default DefaultPingInterval.
	PingInterval time.Duration
	// PermissionTimeout is how long an agent's question waits for an
	// answer when neither its adapter nor the session sets a timeout;
	// 0 waits forever. ferry connect and ferry up default it to
	// 10 minutes (--permission-timeout).
	PermissionTimeout time.Duration
	// HistoryQuota bounds the file contents each session's undo history
	// keeps in StateDir/history (oldest changes dropped first); default
	// filehistory.DefaultQuota (64 MiB).
	HistoryQuota int64
	// HistoryTotal bounds the file histories of all sessions together:
	// past it the least recently written sessions' histories are dropped
	// whole (see prune.go); 0 takes DefaultHistoryTotal, < 0 sets no bound.
	HistoryTotal int64
	// SnapshotMaxFile bounds the size of a file whose content is
	// snapshotted when it is handed over as an artifact (a bigger one
	// downloads as it is then); default DefaultSnapshotMaxFile (32 MiB).
	SnapshotMaxFile int64
	// SnapshotsPerPath is how many snapshots (distinct contents) each
	// path of a workspace keeps; default DefaultSnapshotsPerPath (5).
	SnapshotsPerPath int
	// SnapshotTotal bounds the snapshots of each workspace together: past
	// it the least recently registered go first (snapshots.go); default
	// DefaultSnapshotTotal (256 MiB). Any of the three < 0 takes no
	// snapshots.
	SnapshotTotal int64
	// PruneInterval is how often the histories and transcripts are pruned
	// while the client runs (they are also at start); default
	// DefaultPruneInterval.
	PruneInterval time.Duration
	// FetchAttachmentURLs lets a prompt's context_files name https URLs of
	// other hosts, which the client then fetches (never from a loopback or
	// private address; attachment.Fetcher). Off, such a prompt is refused:
	// a prompt must not make the client request what it likes from inside
	// the operator's network. Uploads (from the master) and data: URLs need
	// no switch.
	FetchAttachmentURLs bool
	// ForgeToken is the GitHub token an isolated session's ship opens pull
	// requests with (control.worktree.ship pull_request); "" gives the
	// forge's compare URL only. It goes to the forge's API and nowhere
	// else: no log line, no error, no message to the master carries it.
	// ForgeTokenSource names where it came from (a flag or variable), for
	// messages.
	ForgeToken, ForgeTokenSource string
	// Forge names self-hosted forge hosts (GitHub Enterprise, GitLab,
	// Gitea); ForgeHTTPClient makes the forge's API calls (tests).
	Forge           forge.Config
	ForgeHTTPClient *http.Client
}

// handledMessages are the control.* types the client handles, as declared
// in session.capabilities.
var handledMessages = []string{
	protocol.TypeSessionOpen,
	protocol.TypePromptRequest,
	protocol.TypePromptCancel,
	protocol.TypeInteractionResponse,
	protocol.TypeInteractionTimeout,
	protocol.TypeSessionCompact,
	protocol.TypeModeSwitch,
	protocol.TypeSessionSettings,
	protocol.TypeFileSearch,
	protocol.TypeFileSearchCancel,
	protocol.TypeModelsList,
	protocol.TypeArtifactRead,
	protocol.TypeArtifactRange,
	protocol.TypeArtifactAck,
	protocol.TypeArtifactCancel,
	protocol.TypeHistoryUndo,
	protocol.TypeHistoryRewind,
	protocol.TypeHistoryList,
	protocol.TypeWorktreeDiff,
	protocol.TypeWorktreeStatus,
	protocol.TypeWorktreePropose,
	protocol.TypeWorktreeShip,
	protocol.TypeWorktreeUpdate,
	protocol.TypeWorktreeAbortUpdate,
	protocol.TypeWorktreeTest,
	protocol.TypeWorktreeRemove,
}

// workspace is one served folder.
type workspace struct {
	protocol.Workspace
	// roots are where a prompt's file references may point: the
	// workspace, its repository's work tree, every workspace of the client.
	roots []string
	ix    *index.Index
}

// Client is the local daemon. Create it with New, run it with Run, end it
// with Close.
type Client struct {
	cfg        Config
	log        *slog.Logger
	dialURL    string
	machine    protocol.MachineInfo
	workspaces []*workspace
	adapters   map[string]adapter.Adapter
	adCaps     map[string]protocol.AdapterCapability
	capsData   []byte // encoded payload of session.capabilities
	svc        *search.Service
	out        *outbox
	marks      *turnMarks       // running turns, in the outbox's database
	prompts    *answeredPrompts // prompts answered, in the outbox's database (prompts.go)
	arts       *artifactLog
	// transcripts keeps the built-in agent's conversations across
	// restarts (transcripts.db); adapters get it in SessionConfig.
	transcripts *transcript.SQLite
	lock        *os.File
	// readSlots bounds the downloads served at once (one token each).
	readSlots chan struct{}
	// fetch turns a prompt's context_files into attachments.
	fetch *attachment.Fetcher

	// stop is cancelled by Close: Run, session workers, turns and searches
	// end. drain outlives it briefly so that a cancelled turn can still
	// write its agent.text.done.
	stop    context.Context
	stopFn  context.CancelCauseFunc // cause adapter.ErrStopping
	drain   context.Context
	drainFn context.CancelFunc

	mu        sync.Mutex
	sessions  map[string]*session
	conn      *conn // the registered connection, nil while offline
	connected chan struct{}
	running   bool
	closed    bool

	wg    sync.WaitGroup // session workers and turns
	runWG sync.WaitGroup
}

// New validates cfg, takes the state directory, opens the outbox and starts
// indexing the workspaces. The client does not connect until Run.
func New(cfg Config) (_ *Client, err error) {
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = cfg.MinBackoff
	}
	if cfg.StableAfter <= 0 {
		cfg.StableAfter = DefaultStableAfter
	}
	if cfg.OutboxLimit <= 0 {
		cfg.OutboxLimit = DefaultOutboxLimit
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = DefaultPingInterval
	}
	if cfg.HistoryTotal == 0 {
		cfg.HistoryTotal = DefaultHistoryTotal
	}
	if cfg.PruneInterval <= 0 {
		cfg.PruneInterval = DefaultPruneInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if len(cfg.Adapters) == 0 {
		// No silent demo agent: a client that offers nothing is a
		// mistake its caller must see.
		return nil, errors.New("client: no agents to offer: pass at least one adapter")
	}
	if cfg.Token == "" {
		return nil, errors.New("client: a token is required")
	}
	if err := checkPermissionTimeout(cfg.PermissionTimeout); err != nil {
		return nil, err
	}
	dialURL, err := clientURL(cfg.MasterURL)
	if err != nil {
		return nil, err
	}
	if len(cfg.Workspaces) == 0 {
		return nil, errors.New("client: at least one workspace is required")
	}
	if cfg.StateDir == "" {
		if cfg.StateDir, err = defaultStateDir(); err != nil {
			return nil, err
		}
	}
	if cfg.MachineName == "" {
		if cfg.MachineName, err = os.Hostname(); err != nil || cfg.MachineName == "" {
			cfg.MachineName = "ferry-client"
		}
		cfg.MachineName = protocol.VisibleName(cfg.MachineName) // a name given with --name must pass as it is
	}

	c := &Client{
		cfg:       cfg,
		log:       cfg.Logger,
		dialURL:   dialURL,
		adapters:  map[string]adapter.Adapter{},
		adCaps:    map[string]protocol.AdapterCapability{},
		sessions:  map[string]*session{},
		connected: make(chan struct{}),
		readSlots: make(chan struct{}, maxReads),
		fetch: &attachment.Fetcher{
			Master:    strings.TrimSuffix(dialURL, "/v1/client"),
			AllowURLs: cfg.FetchAttachmentURLs,
		},
	}
	c.stop, c.stopFn = context.WithCancelCause(context.Background())
	c.drain, c.drainFn = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			_ = c.release()
		}
	}()

	if err := c.openWorkspaces(); err != nil {
		return nil, err
	}
	var adCaps []protocol.AdapterCapability
	for _, a := range cfg.Adapters {
		ac := a.Capability()
		if _, dup := c.adapters[ac.ID]; dup {
			return nil, fmt.Errorf("client: two adapters with id %q", ac.ID)
		}
		c.adapters[ac.ID] = a
		c.adCaps[ac.ID] = ac
		adCaps = append(adCaps, ac)
	}

	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("client: state directory: %w", err)
	}
	if c.lock, err = lockStateDir(cfg.StateDir); err != nil {
		return nil, err
	}
	id, err := machineID(filepath.Join(cfg.StateDir, "machine-id"))
	if err != nil {
		return nil, err
	}
	c.machine = protocol.MachineInfo{ID: id, Name: cfg.MachineName}
	if c.out, err = openOutbox(filepath.Join(cfg.StateDir, "outbox.db"), cfg.OutboxLimit); err != nil {
		return nil, err
	}
	if c.arts, err = openArtifactLog(filepath.Join(cfg.StateDir, "artifacts.db"), filepath.Join(cfg.StateDir, "snapshots"),
		limitsOf(cfg), cfg.Logger); err != nil {
		return nil, err
	}
	if c.marks, err = openTurnMarks(c.out.db); err != nil {
		return nil, err
	}
	if c.prompts, err = openAnsweredPrompts(c.out.db); err != nil {
		return nil, err
	}
	c.endCutTurnsSoon()
	// A crash may have left git's worktree records and ours apart.
	c.pruneWorktrees(c.stop)
	if c.transcripts, err = transcript.Open(c.stop, filepath.Join(cfg.StateDir, "transcripts.db"), transcript.Options{MaxAge: stateMaxAge}); err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}

	wss := make([]protocol.Workspace, len(c.workspaces))
	for i, w := range c.workspaces {
		wss[i] = w.Workspace
	}
	caps := &protocol.Capabilities{
		ProtocolVersion: protocol.Version,
		Client:          protocol.ClientInfo{Name: ClientName, Version: version.String(), OS: runtime.GOOS, Arch: runtime.GOARCH},
		Machine:         &c.machine,
		Workspaces:      wss,
		Adapters:        adCaps,
		Messages:        handledMessages,
		FileReferences: &protocol.FileRefCapabilities{
			Search:             true,
			SearchScopes:       []string{protocol.ScopeWorkspace, protocol.ScopeProject, protocol.ScopeGlobal},
			MaxResultsCap:      protocol.MaxResultsCap,
			PositionEncoding:   protocol.PositionUTF16,
			TokenSyntaxVersion: protocol.TokenSyntaxVersion,
		},
		PromptsOnce: true, // prompts.go
	}
	// The master decodes strictly; a machine name or an adapter
	// declaration it would refuse is a configuration error, found here.
	if c.capsData, err = checkedEncode(protocol.New(protocol.TypeCapabilities, caps)); err != nil {
		return nil, fmt.Errorf("client: capabilities: %w", err)
	}
	c.startPruning()
	return c, nil
}

// openWorkspaces resolves the workspaces and starts their indexes.
func (c *Client) openWorkspaces() error {
	seen := map[string]bool{}
	for _, dir := range c.cfg.Workspaces {
		abs, err := filepath.Abs(dir)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			return fmt.Errorf("client: workspace %s: %w", dir, err)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return fmt.Errorf("client: workspace %s: %w", dir, err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("client: workspace %s: not a directory", dir)
		}
		if seen[abs] {
			return fmt.Errorf("client: workspace %s is listed twice", abs)
		}
		seen[abs] = true
		sum := sha256.Sum256([]byte(abs))
		// A folder's name may hold what a name people see may not
		// (protocol.CheckName); it is shown with U+FFFD in their place.
		name := protocol.VisibleName(filepath.Base(abs))
		w := &workspace{Workspace: protocol.Workspace{ID: hex.EncodeToString(sum[:])[:12], Name: name, Path: abs}}
		gitInfo(c.stop, &w.Workspace)
		c.workspaces = append(c.workspaces, w)
	}
	var sws []*search.Workspace
	for _, w := range c.workspaces {
		w.roots = []string{w.Path}
		if repo, ok := ignore.FindRepo(w.Path); ok && repo.WorkTree != w.Path {
			w.roots = append(w.roots, repo.WorkTree)
		}
		for _, o := range c.workspaces {
			if o != w {
				w.roots = append(w.roots, o.Path)
			}
		}
		ix, err := index.Open(c.stop, w.Path, index.Options{Warn: c.indexWarn(w.Path)})
		if err != nil {
			return fmt.Errorf("client: index workspace %s: %w", w.Path, err)
		}
		w.ix = ix
		sws = append(sws, &search.Workspace{Name: w.ID, Root: w.Path, Index: ix})
	}
	// A project-scope search opens the repository's index on demand; it
	// lives as long as the client, not the search that asked for it.
	c.svc = search.NewService(sws, func(_ context.Context, root string) (*index.Index, error) {
		return index.Open(c.stop, root, index.Options{Warn: c.indexWarn(root)})
	})
	return nil
}

func (c *Client) indexWarn(root string) func(error) {
	return func(err error) { c.log.Warn("workspace index degraded", "root", root, "err", err) }
}

// WaitIndexed waits until every workspace's first listing is done, so a
// search sees all files (before that, searches answer from what is listed
// so far).
func (c *Client) WaitIndexed(ctx context.Context) error {
	for _, w := range c.workspaces {
		if err := w.ix.Wait(ctx); err != nil {
			return fmt.Errorf("client: index %s: %w", w.Path, err)
		}
	}
	return nil
}

// Machine returns the machine the client announces.
func (c *Client) Machine() protocol.MachineInfo { return c.machine }

// Workspaces returns the workspaces the client announces.
func (c *Client) Workspaces() []protocol.Workspace {
	out := make([]protocol.Workspace, len(c.workspaces))
	for i, w := range c.workspaces {
		out[i] = w.Workspace
	}
	return out
}

// Connected returns a channel that is closed once the client is registered
// on a connection (its session.capabilities is written). While connected,
// the returned channel is already closed; after the connection drops, a new
// call returns a fresh channel for the next registration.
func (c *Client) Connected() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connected
}

// Pending is the number of messages waiting in the outbox for an ack.
func (c *Client) Pending() int { return c.out.Len() }

// drainGrace is how long Close lets cancelled turns write their
// agent.text.done into a full outbox.
const drainGrace = 2 * time.Second

// Close cancels running turns (each still ends with its agent.text.done in
// the outbox), stops Run, and closes the sessions, the indexes and the
// outbox. It is safe to call more than once.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.stopFn(adapter.ErrStopping)
	c.runWG.Wait()
	t := time.AfterFunc(drainGrace, c.drainFn)
	c.wg.Wait()
	t.Stop()
	return c.release()
}

// release frees what New acquired.
func (c *Client) release() error {
	c.stopFn(adapter.ErrStopping)
	c.drainFn()
	var errs []error
	c.mu.Lock()
	sessions := c.sessions
	c.sessions = map[string]*session{}
	c.mu.Unlock()
	for _, s := range sessions {
		if err := s.close(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.svc != nil {
		errs = append(errs, c.svc.Close())
	}
	for _, w := range c.workspaces {
		if w.ix != nil {
			errs = append(errs, w.ix.Close())
		}
	}
	if c.out != nil {
		errs = append(errs, c.out.Close())
	}
	if c.arts != nil {
		errs = append(errs, c.arts.Close())
	}
	if c.transcripts != nil {
		errs = append(errs, c.transcripts.Close())
	}
	if c.lock != nil {
		errs = append(errs, c.lock.Close())
	}
	return errors.Join(errs...)
}

// clientURL turns the master's base URL into the client endpoint's.
func clientURL(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("client: master URL %q: want http(s):// or ws(s)://host[:port]", base)
	}
	switch u.Scheme {
	case "http", "ws":
		u.Scheme = "ws"
	case "https", "wss":
		u.Scheme = "wss"
	default:
		return "", fmt.Errorf("client: master URL %q: want http(s):// or ws(s)://host[:port]", base)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	if !strings.HasSuffix(u.Path, "/v1/client") {
		u.Path += "/v1/client"
	}
	u.RawPath = ""
	u.RawQuery, u.Fragment = "", ""
	return u.String(), nil
}

func defaultStateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "ferry", "client"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("client: no state directory: %w", err)
	}
	return filepath.Join(home, ".local", "state", "ferry", "client"), nil
}

// machineID reads the machine id from path, creating it (random, 0600) the
// first time.
func machineID(path string) (string, error) {
	b, err := os.ReadFile(path) //nolint:gosec // the path is in the user's own state directory
	if err == nil {
		id := strings.TrimSpace(string(b))
		if id != "" && len(id) <= 128 {
			return id, nil
		}
		return "", fmt.Errorf("client: machine id file %s is damaged; remove it to get a new id", path)
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("client: machine id: %w", err)
	}
	id := protocol.NewID()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("client: machine id: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("client: machine id: %w", err)
	}
	return id, nil
}

// payloadTypes maps each message type to its payload's pointer type, so an
// adapter's Emit is checked before protocol.New (which panics on a
// mismatch, a programming error it must not turn into a crash here).
var payloadTypes = func() map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for _, info := range protocol.Messages() {
		m[info.Type] = reflect.PointerTo(info.Payload)
	}
	return m
}()

// checkedEncode encodes m and decodes it again as the master will, so that
// nothing the master would refuse is ever written to the outbox.
func checkedEncode(m *protocol.Message) ([]byte, error) {
	data, err := protocol.Encode(m)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", m.Type, err)
	}
	if _, err := protocol.DecodeFrom(protocol.RoleClient, data); err != nil {
		return nil, fmt.Errorf("encode %s: %w", m.Type, err)
	}
	return data, nil
}
