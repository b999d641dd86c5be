package master

import "time"

// SetSubscribeHook runs f in every ui.session.subscribe while live events
// are held back (after the store was read, before the replay), so a test can
// publish events into exactly that window. It returns the undo.
func SetSubscribeHook(f func(sessionID string)) (restore func()) {
	testHookSubscribe = f
	return func() { testHookSubscribe = nil }
}

// SetMetaWait shortens how long a download waits for its client to open
// the file. It returns the undo.
func SetMetaWait(d time.Duration) (restore func()) {
	old := metaWait
	metaWait = d
	return func() { metaWait = old }
}

// SetMaxDownloadLinks lowers the cap on the download links one UI token
// holds. It returns the undo.
func SetMaxDownloadLinks(n int) (restore func()) {
	old := maxDownloadLinks
	maxDownloadLinks = n
	return func() { maxDownloadLinks = old }
}

const MaxRedeliver = maxRedeliver
