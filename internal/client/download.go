package client

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ferry-dev/ferry/internal/contentstore"
	"github.com/ferry-dev/ferry/protocol"
)

// Downloads: the master asks for a recorded artifact by session and
// artifact_id (control.artifact.read), never by path; the client opens the
// file it recorded, confined to its workspace, and streams the range the
// master asks for within the master's credit window (see
// protocol/download.go).

const (
	// maxReads bounds the downloads a client serves at once; more are
	// answered busy.
	maxReads = 32
)

// readIdle bounds each wait of a download for the master (for its range,
// for an acknowledgement): a master that forgot a download does not keep
// the file open for ever. A variable so that tests can shorten it.
var readIdle = 2 * time.Minute

var (
	errOutside    = errors.New("the file resolves outside its workspace")
	errNotRegular = errors.New("not a regular file")
	errHardLinked = errors.New("the file has other hard links")
	errReadIdle   = errors.New("the master stopped asking for data")
)

// read is one download the client serves on a connection.
type read struct {
	c       *Client
	cn      *conn
	id      string
	session string
	ctx     context.Context
	cancel  context.CancelFunc
	ranges  chan *protocol.ArtifactRange // cap 1

	mu     sync.Mutex
	acked  int64
	ackSig chan struct{} // cap 1
}

// dispatchDownload handles the control.artifact.* messages on the reader;
// it reports whether m was one. Nothing here waits: a read runs on its own
// goroutine.
func (c *Client) dispatchDownload(cn *conn, m *protocol.Message) bool {
	switch p := m.Payload.(type) {
	case *protocol.ArtifactRead:
		c.startRead(cn, m, p)
	case *protocol.ArtifactRange:
		if r := cn.read(p.RequestID); r != nil {
			select {
			case r.ranges <- p:
			default: // a second range for one read: the first one stands
				c.log.Warn("a second range for one download ignored", "request", p.RequestID)
			}
		} else {
			c.endRead(cn, m.SessionID, p.RequestID, &protocol.Error{Code: protocol.CodeNotFound, Field: "payload.request_id",
				Message: "no such download on this connection"})
		}
	case *protocol.ArtifactAck:
		if r := cn.read(p.RequestID); r != nil {
			r.ack(p.Through)
		}
	case *protocol.ArtifactCancel:
		if r := cn.read(p.RequestID); r != nil {
			r.cancel()
		}
	default:
		return false
	}
	return true
}

func (cn *conn) read(id string) *read {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.reads[id]
}

// endReads cancels the connection's downloads when it ends: their acks
// could never arrive.
func (cn *conn) endReads() {
	cn.mu.Lock()
	reads := cn.reads
	cn.reads = nil
	cn.mu.Unlock()
	for _, r := range reads {
		r.cancel()
	}
}

func (c *Client) startRead(cn *conn, m *protocol.Message, p *protocol.ArtifactRead) {
	select {
	case c.readSlots <- struct{}{}:
	default:
		c.endRead(cn, m.SessionID, p.RequestID, &protocol.Error{Code: protocol.CodeBusy, Message: "the client serves too many downloads"})
		return
	}
	ctx, cancel := context.WithCancel(c.stop)
	r := &read{c: c, cn: cn, id: p.RequestID, session: m.SessionID, ctx: ctx, cancel: cancel,
		ranges: make(chan *protocol.ArtifactRange, 1), ackSig: make(chan struct{}, 1)}
	cn.mu.Lock()
	_, dup := cn.reads[r.id]
	if cn.reads == nil || dup {
		cn.mu.Unlock()
		cancel()
		<-c.readSlots
		return // the connection is over, or the master repeated itself
	}
	cn.reads[r.id] = r
	cn.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() { <-c.readSlots }()
		defer func() {
			cancel()
			cn.mu.Lock()
			if cn.reads != nil && cn.reads[r.id] == r {
				delete(cn.reads, r.id)
			}
			cn.mu.Unlock()
		}()
		r.serve(m.MessageID, p.ArtifactID)
	}()
}

// endRead sends session.artifact.end for request id (not kept).
func (c *Client) endRead(cn *conn, sessionID, id string, e *protocol.Error) {
	end := protocol.New(protocol.TypeArtifactEnd, &protocol.ArtifactEnd{RequestID: id, Error: e})
	end.SessionID = sessionID
	c.reply(cn, end)
}

func (r *read) ack(through int64) {
	r.mu.Lock()
	if through > r.acked {
		r.acked = through
	}
	r.mu.Unlock()
	select {
	case r.ackSig <- struct{}{}:
	default:
	}
}

// send sends a download message on the read's connection; false when the
// connection is gone.
func (r *read) send(m *protocol.Message) bool {
	data, err := protocol.Encode(m)
	if err != nil {
		r.c.log.Error("encode download message", "type", m.Type, "err", err)
		return false
	}
	return r.cn.send(data)
}

func (r *read) fail(e *protocol.Error) {
	r.c.endRead(r.cn, r.session, r.id, e)
}

// serve runs one download: open, describe, wait for the range, stream it.
func (r *read) serve(parentID, artifactID string) {
	log := r.c.log.With("session", r.session, "artifact", artifactID, "request", r.id)
	rec, err := r.c.arts.Lookup(r.ctx, r.session, artifactID)
	switch {
	case errors.Is(err, errUnknownArtifact):
		log.Warn("download of an artifact this session never registered refused")
		r.fail(&protocol.Error{Code: protocol.CodeNotFound, Field: "payload.artifact_id", Message: "the session has no such artifact"})
		return
	case err != nil:
		log.Error("download: look up artifact", "err", err)
		r.fail(&protocol.Error{Code: protocol.CodeInternal, Message: "the artifact could not be looked up"})
		return
	}
	af, err := r.c.openArtifact(artifactID, rec, log)
	switch {
	case errors.Is(err, errHardLinked):
		log.Warn("download refused", "path", rec.Path, "err", err)
		r.fail(&protocol.Error{Code: protocol.CodeNotFound, Message: "the artifact's file was replaced by one with other names since it was handed over; ask the agent to hand it over again"})
		return
	case err != nil:
		log.Warn("download refused", "path", rec.Path, "err", err)
		r.fail(&protocol.Error{Code: protocol.CodeNotFound, Message: "the artifact's file is gone or has left the workspace"})
		return
	}
	f := af.f
	defer func() { _ = f.Close() }()
	size := af.size
	if af.changed {
		log.Info("download serves the current file: the version the agent made is no longer kept", "path", rec.Path)
	}
	meta := protocol.New(protocol.TypeArtifactMeta, &protocol.ArtifactMeta{RequestID: r.id, Size: size,
		ModifiedAt: af.mtime.UTC().Format(time.RFC3339Nano), ETag: af.etag, ChangedSince: af.changed,
		WorkspaceDiffers: af.differs})
	meta.ParentID, meta.SessionID = parentID, r.session
	if !r.send(meta) {
		return
	}
	var rng *protocol.ArtifactRange
	idle := time.NewTimer(readIdle)
	defer idle.Stop()
	select {
	case rng = <-r.ranges:
	case <-r.ctx.Done():
		return // cancelled: the master needed no body
	case <-idle.C:
		log.Info("download: no range requested in time")
		r.fail(&protocol.Error{Code: protocol.CodeInvalidValue, Message: "no range was requested in time"})
		return
	}
	if rng.Offset+rng.Length > size {
		r.fail(&protocol.Error{Code: protocol.CodeInvalidValue, Field: "payload.length", Message: "the range passes the end of the file"})
		return
	}
	r.ack(rng.Offset)
	if err := r.stream(f, rng); err != nil {
		if r.ctx.Err() == nil {
			log.Warn("download stopped", "err", err)
			r.fail(&protocol.Error{Code: protocol.CodeInternal, Message: "the file could not be read to the end"})
		}
		return
	}
	end := protocol.New(protocol.TypeArtifactEnd, &protocol.ArtifactEnd{RequestID: r.id})
	end.SessionID = r.session
	r.send(end)
}

// stream sends the range in chunks, never more than the window past the
// master's last acknowledgement: at most a window of the file is in
// memory at a time, whatever its size.
func (r *read) stream(f *os.File, rng *protocol.ArtifactRange) error {
	pos, end := rng.Offset, rng.Offset+rng.Length
	for pos < end {
		n := min(int64(protocol.ArtifactChunkSize), end-pos)
		if err := r.waitCredit(pos+n, rng.Window); err != nil {
			return err
		}
		frame, data, err := protocol.NewArtifactChunkFrame(r.id, pos, int(n))
		if err != nil {
			return err
		}
		if _, err := f.ReadAt(data, pos); err != nil {
			return fmt.Errorf("read at %d: %w (the file changed while it was read)", pos, err)
		}
		if !r.cn.sendFrame(outFrame{data: frame, binary: true}) {
			return errors.New("the connection ended")
		}
		pos += n
	}
	return nil
}

// waitCredit waits until the master's acknowledgements allow sending up
// to offset limit.
func (r *read) waitCredit(limit, window int64) error {
	var idle *time.Timer
	for {
		r.mu.Lock()
		ok := limit <= r.acked+window
		r.mu.Unlock()
		if ok {
			if idle != nil {
				idle.Stop()
			}
			return nil
		}
		if idle == nil {
			idle = time.NewTimer(readIdle)
			defer idle.Stop()
		}
		select {
		case <-r.ackSig:
		case <-r.ctx.Done():
			return r.ctx.Err()
		case <-idle.C:
			return errReadIdle
		}
	}
}

// artifactFile is what a download serves: the snapshot, or the file on
// disk, with the version the master is told.
type artifactFile struct {
	f       *os.File
	size    int64
	mtime   time.Time
	etag    string
	changed bool // the file on disk, which is not the registered version
	differs bool // the snapshot, while the workspace's file is not that version
}

// workspaceDiffers reports whether the workspace's file at rec.Path is no
// longer the registered version: changed, or gone (an undo removed the
// file the agent created); opened as a download would open it, so nothing
// outside the workspace is looked at. A record from before versions were
// kept cannot tell, and says no.
func workspaceDiffers(wsPath string, rec artifactRecord) bool {
	if !rec.ID.known() {
		return false
	}
	f, fi, err := openInWorkspace(wsPath, rec.Path)
	if err != nil {
		return true
	}
	_ = f.Close()
	return !rec.ID.equal(versionOf(fi))
}

// openArtifact opens a recorded artifact for reading: its snapshot when
// the client keeps it (checked against its hash), with the registered
// size, time and ETag. Without one (evicted, too big, never taken, or
// damaged) the file as it is now, refusing what is not inside its
// workspace now and a file with other hard links (errHardLinked): another
// name may lie outside the workspace. That file is marked changed when it
// is not the registered version (device and inode, size, modification
// time); a record from before versions were kept cannot tell, and is not.
func (c *Client) openArtifact(artifactID string, rec artifactRecord, log *slog.Logger) (*artifactFile, error) {
	var ws *workspace
	for _, w := range c.workspaces {
		if w.Path == rec.Root {
			ws = w
		}
	}
	if ws == nil && c.isolatedRoot(rec.Root) {
		// An isolated session's artifact: its worktree is the workspace.
		ws = &workspace{Workspace: protocol.Workspace{Path: rec.Root}}
	}
	if ws == nil {
		return nil, fmt.Errorf("workspace %s is no longer served", rec.Root)
	}
	if rec.Snapshot != "" {
		f, err := c.arts.snaps.Open(rec.Snapshot)
		if err == nil {
			return &artifactFile{f: f, size: rec.SnapSize, mtime: time.Unix(0, rec.ID.MTime), etag: etagOf(artifactID, rec.ID),
				differs: workspaceDiffers(ws.Path, rec)}, nil
		}
		if errors.Is(err, contentstore.ErrNotFound) {
			log.Info("download: the snapshot was evicted meanwhile", "path", rec.Path)
		} else {
			// Never served as the agent's version: the file on disk goes,
			// marked if it changed.
			log.Error("download: the artifact's snapshot is damaged; serving the file on disk", "path", rec.Path, "err", err)
		}
	}
	f, fi, err := openInWorkspace(ws.Path, rec.Path)
	if err != nil {
		return nil, err
	}
	if n := linkCount(fi); n > 1 {
		_ = f.Close()
		return nil, fmt.Errorf("%w: %s (%d names)", errHardLinked, rec.Path, n)
	}
	v := versionOf(fi)
	return &artifactFile{f: f, size: fi.Size(), mtime: fi.ModTime(), etag: etagOf(artifactID, v),
		changed: rec.ID.known() && !rec.ID.equal(v)}, nil
}

// openInWorkspace opens the regular file at rel ('/'-separated) in the
// workspace at wsPath, refusing what is not inside it now: the path is
// resolved at open time (a symlink swapped in after the agent registered
// the file is followed here, and refused when it leads outside), and the
// file is opened through an os.Root on the workspace, which refuses any
// step outside it — also one a swap between the check and the open would
// add — and follows no symlink without checking it. The FileInfo is the
// open descriptor's.
func openInWorkspace(wsPath, relPath string) (*os.File, os.FileInfo, error) {
	real, err := filepath.EvalSymlinks(filepath.Join(wsPath, filepath.FromSlash(relPath)))
	if err != nil {
		return nil, nil, err
	}
	rel, err := filepath.Rel(wsPath, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return nil, nil, fmt.Errorf("%w: %s", errOutside, real)
	}
	root, err := os.OpenRoot(wsPath)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = root.Close() }()
	f, err := root.OpenFile(rel, openReadFlags, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = errNotRegular
	}
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// etagOf is a version of a file: it changes when the file is replaced or
// written (its identity, size or modification time change), and is the
// same for a snapshot and the unchanged file it was taken of. Hashing the
// identity keeps inode numbers off the wire.
func etagOf(artifactID string, v fileVersion) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%d\x00", artifactID, v.Size, v.MTime)
	h.Write(v.Ident)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:16])
}
