package master

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"

	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/connlimit"
	"github.com/ferry-dev/ferry/internal/master/upload"
	"github.com/ferry-dev/ferry/internal/store"
)

// KeyHeader carries a browser's key share on the UI's plain HTTP requests
// (an upload), with the cookie share in the session cookie: the same two
// halves /v1/ui needs, since the cookie alone authorises nothing.
const KeyHeader = "X-Ferry-Key"

// newUploads starts the upload service on the grant key the master nodes
// share (stored once, by whichever node comes first).
func newUploads(ctx context.Context, cfg Config) (*upload.Service, error) {
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, fmt.Errorf("master: upload key: %w", err)
	}
	key, err := cfg.Store.Secret(ctx, upload.KeyName, fresh)
	if err != nil {
		return nil, fmt.Errorf("master: upload key: %w", err)
	}
	return upload.New(upload.Config{Store: cfg.Store, Key: key, MaxBytes: cfg.UploadMaxBytes,
		TTL: cfg.UploadTTL, Quota: cfg.UploadQuota, Logger: cfg.Logger})
}

// serveUpload handles POST /v1/sessions/{session_id}/uploads: the UI
// token as a bearer token, or a browser's cookie share with its key share
// in KeyHeader from the master's own origin.
func (m *Master) serveUpload(w http.ResponseWriter, r *http.Request) {
	secret, ok := bearer(r)
	if !ok {
		secret, ok = m.uploadSecret(r)
	}
	if !ok {
		m.log.Info("refused upload", "remote", m.remote(r))
		m.uploads.WriteError(w, r, upload.Unauthorized)
		return
	}
	tok, err := auth.Verify(r.Context(), m.st, secret, store.TokenUI)
	switch {
	case errors.Is(err, auth.ErrUnauthorized):
		m.log.Info("refused upload", "remote", m.remote(r))
		m.uploads.WriteError(w, r, upload.Unauthorized)
		return
	case err != nil:
		m.uploads.WriteError(w, r, fmt.Errorf("verify token: %w", err))
		return
	}
	connlimit.MarkAuthenticated(r.Context())
	m.uploads.Receive(w, r, tok)
}

// uploadSecret is the UI token secret of a browser's upload request.
func (m *Master) uploadSecret(r *http.Request) (string, bool) {
	ck, _, ok := m.sessionCookie(r)
	key := r.Header.Get(KeyHeader)
	if !ok || key == "" || !m.view(r).SameOrigin(r.Header.Get("Origin")) {
		return "", false
	}
	return joinUISecret(ck, key)
}
