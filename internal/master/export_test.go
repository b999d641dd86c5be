package master

// SetSubscribeHook runs f in every ui.session.subscribe while live events
// are held back (after the store was read, before the replay), so a test can
// publish events into exactly that window. It returns the undo.
func SetSubscribeHook(f func(sessionID string)) (restore func()) {
	testHookSubscribe = f
	return func() { testHookSubscribe = nil }
}
