package metrics

// One wrapper per store.Store method that can fail (Close aside), so every
// failure is counted with the method as op. A method the interface gains
// later passes through the embedded Store uncounted until it is added here;
// TestStoreWrapsEveryMethod says so.

import (
	"context"
	"encoding/json"
	"time"

	"github.com/ferry-dev/ferry/internal/store"
)

func (w countingStore) CreateToken(ctx context.Context, t store.Token) error {
	return w.count("CreateToken", w.Store.CreateToken(ctx, t))
}

func (w countingStore) TokenByHash(ctx context.Context, hash []byte) (store.Token, error) {
	v, err := w.Store.TokenByHash(ctx, hash)
	return v, w.count("TokenByHash", err)
}

func (w countingStore) ConsumeToken(ctx context.Context, id string) error {
	return w.count("ConsumeToken", w.Store.ConsumeToken(ctx, id))
}

func (w countingStore) RevokeToken(ctx context.Context, id string) error {
	return w.count("RevokeToken", w.Store.RevokeToken(ctx, id))
}

func (w countingStore) ListTokens(ctx context.Context) ([]store.Token, error) {
	v, err := w.Store.ListTokens(ctx)
	return v, w.count("ListTokens", err)
}

func (w countingStore) PutMachine(ctx context.Context, m store.Machine) error {
	return w.count("PutMachine", w.Store.PutMachine(ctx, m))
}

func (w countingStore) Machines(ctx context.Context) ([]store.Machine, error) {
	v, err := w.Store.Machines(ctx)
	return v, w.count("Machines", err)
}

func (w countingStore) CreateSession(ctx context.Context, s store.Session) error {
	return w.count("CreateSession", w.Store.CreateSession(ctx, s))
}

func (w countingStore) Session(ctx context.Context, id string) (store.Session, error) {
	v, err := w.Store.Session(ctx, id)
	return v, w.count("Session", err)
}

func (w countingStore) ListSessions(ctx context.Context, machineID string, limit int) ([]store.Session, error) {
	v, err := w.Store.ListSessions(ctx, machineID, limit)
	return v, w.count("ListSessions", err)
}

func (w countingStore) FindSessions(ctx context.Context, f store.SessionFilter) ([]store.Session, error) {
	v, err := w.Store.FindSessions(ctx, f)
	return v, w.count("FindSessions", err)
}

func (w countingStore) UpdateSession(ctx context.Context, s store.Session) error {
	return w.count("UpdateSession", w.Store.UpdateSession(ctx, s))
}

func (w countingStore) RenameSession(ctx context.Context, id string, title string) error {
	return w.count("RenameSession", w.Store.RenameSession(ctx, id, title))
}

func (w countingStore) MarkPrompted(ctx context.Context, id, title string) (bool, error) {
	v, err := w.Store.MarkPrompted(ctx, id, title)
	return v, w.count("MarkPrompted", err)
}

func (w countingStore) AgentTitleSession(ctx context.Context, id, title string) (bool, error) {
	v, err := w.Store.AgentTitleSession(ctx, id, title)
	return v, w.count("AgentTitleSession", err)
}

func (w countingStore) UnpromptedSessions(ctx context.Context, before time.Time, limit int) ([]store.Session, error) {
	v, err := w.Store.UnpromptedSessions(ctx, before, limit)
	return v, w.count("UnpromptedSessions", err)
}

func (w countingStore) DeleteUnprompted(ctx context.Context, id string) error {
	return w.count("DeleteUnprompted", w.Store.DeleteUnprompted(ctx, id))
}

func (w countingStore) ArchiveSession(ctx context.Context, id string, archived bool) error {
	return w.count("ArchiveSession", w.Store.ArchiveSession(ctx, id, archived))
}

func (w countingStore) DeleteSession(ctx context.Context, id string) error {
	return w.count("DeleteSession", w.Store.DeleteSession(ctx, id))
}

func (w countingStore) AppendEvents(ctx context.Context, sessionID string, evs []store.Event) ([]store.Event, error) {
	v, err := w.Store.AppendEvents(ctx, sessionID, evs)
	return v, w.count("AppendEvents", err)
}

func (w countingStore) Events(ctx context.Context, sessionID string, afterSeq uint64, limit int) ([]store.Event, error) {
	v, err := w.Store.Events(ctx, sessionID, afterSeq, limit)
	return v, w.count("Events", err)
}

func (w countingStore) OldestSeq(ctx context.Context, sessionID string) (uint64, error) {
	v, err := w.Store.OldestSeq(ctx, sessionID)
	return v, w.count("OldestSeq", err)
}

func (w countingStore) Trim(ctx context.Context, sessionID string, keep int) error {
	return w.count("Trim", w.Store.Trim(ctx, sessionID, keep))
}

func (w countingStore) Undelivered(ctx context.Context, machineID string, before time.Time, limit int) ([]store.Delivery, error) {
	v, err := w.Store.Undelivered(ctx, machineID, before, limit)
	return v, w.count("Undelivered", err)
}

func (w countingStore) Delivered(ctx context.Context, sessionID, messageID string) error {
	return w.count("Delivered", w.Store.Delivered(ctx, sessionID, messageID))
}

func (w countingStore) OpenInteraction(ctx context.Context, in store.Interaction) error {
	return w.count("OpenInteraction", w.Store.OpenInteraction(ctx, in))
}

func (w countingStore) SettleInteraction(ctx context.Context, sessionID string, id string, outcome string, answer json.RawMessage) (bool, error) {
	v, err := w.Store.SettleInteraction(ctx, sessionID, id, outcome, answer)
	return v, w.count("SettleInteraction", err)
}

func (w countingStore) OpenInteractions(ctx context.Context, sessionID string) ([]store.Interaction, error) {
	v, err := w.Store.OpenInteractions(ctx, sessionID)
	return v, w.count("OpenInteractions", err)
}

func (w countingStore) Interaction(ctx context.Context, sessionID string, id string) (store.Interaction, error) {
	v, err := w.Store.Interaction(ctx, sessionID, id)
	return v, w.count("Interaction", err)
}

func (w countingStore) PutArtifact(ctx context.Context, a store.Artifact) error {
	return w.count("PutArtifact", w.Store.PutArtifact(ctx, a))
}

func (w countingStore) Artifact(ctx context.Context, sessionID string, id string) (store.Artifact, error) {
	v, err := w.Store.Artifact(ctx, sessionID, id)
	return v, w.count("Artifact", err)
}

func (w countingStore) Artifacts(ctx context.Context, sessionID string, limit int) ([]store.Artifact, error) {
	v, err := w.Store.Artifacts(ctx, sessionID, limit)
	return v, w.count("Artifacts", err)
}

func (w countingStore) CreateDownloadTokens(ctx context.Context, ts []store.DownloadToken) error {
	return w.count("CreateDownloadTokens", w.Store.CreateDownloadTokens(ctx, ts))
}

func (w countingStore) DownloadTokenByHash(ctx context.Context, hash []byte) (store.DownloadToken, error) {
	v, err := w.Store.DownloadTokenByHash(ctx, hash)
	return v, w.count("DownloadTokenByHash", err)
}

func (w countingStore) RevokeDownloadToken(ctx context.Context, id string) error {
	return w.count("RevokeDownloadToken", w.Store.RevokeDownloadToken(ctx, id))
}

func (w countingStore) DeleteExpiredDownloadTokens(ctx context.Context, now time.Time) (int, error) {
	v, err := w.Store.DeleteExpiredDownloadTokens(ctx, now)
	return v, w.count("DeleteExpiredDownloadTokens", err)
}

func (w countingStore) TrimDownloadTokens(ctx context.Context, ownerID string, keep int) (int, error) {
	v, err := w.Store.TrimDownloadTokens(ctx, ownerID, keep)
	return v, w.count("TrimDownloadTokens", err)
}

func (w countingStore) PutUpload(ctx context.Context, u store.Upload, q store.UploadQuota) error {
	return w.count("PutUpload", w.Store.PutUpload(ctx, u, q))
}

func (w countingStore) Upload(ctx context.Context, id string) (store.Upload, error) {
	v, err := w.Store.Upload(ctx, id)
	return v, w.count("Upload", err)
}

func (w countingStore) UploadInfo(ctx context.Context, id string) (store.Upload, error) {
	v, err := w.Store.UploadInfo(ctx, id)
	return v, w.count("UploadInfo", err)
}

func (w countingStore) DeleteUpload(ctx context.Context, id string) error {
	return w.count("DeleteUpload", w.Store.DeleteUpload(ctx, id))
}

func (w countingStore) DeleteExpiredUploads(ctx context.Context, now time.Time) (int, error) {
	v, err := w.Store.DeleteExpiredUploads(ctx, now)
	return v, w.count("DeleteExpiredUploads", err)
}

func (w countingStore) PutPushSubscription(ctx context.Context, p store.PushSubscription, max int) error {
	return w.count("PutPushSubscription", w.Store.PutPushSubscription(ctx, p, max))
}

func (w countingStore) DeletePushSubscription(ctx context.Context, endpoint string, ownerID string) error {
	return w.count("DeletePushSubscription", w.Store.DeletePushSubscription(ctx, endpoint, ownerID))
}

func (w countingStore) PushSubscriptions(ctx context.Context, now time.Time) ([]store.PushSubscription, error) {
	v, err := w.Store.PushSubscriptions(ctx, now)
	return v, w.count("PushSubscriptions", err)
}

func (w countingStore) Secret(ctx context.Context, name string, fresh []byte) ([]byte, error) {
	v, err := w.Store.Secret(ctx, name, fresh)
	return v, w.count("Secret", err)
}

func (w countingStore) Ping(ctx context.Context) error {
	return w.count("Ping", w.Store.Ping(ctx))
}

func (w countingStore) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	held, err := w.Store.AcquireLease(ctx, name, holder, ttl)
	return held, w.count("AcquireLease", err)
}

func (w countingStore) ReleaseLease(ctx context.Context, name, holder string) error {
	return w.count("ReleaseLease", w.Store.ReleaseLease(ctx, name, holder))
}
