package protocol

import "reflect"

// TypeUIFocus is ui.focus: which session a UI shows and whether its user
// is looking at it. The master keeps the latest per UI connection (and
// forgets it when the connection closes) to decide on Web Push
// notifications: none goes out for a session a UI is focused on.
const TypeUIFocus = "ui.focus"

func init() {
	registry[TypeUIFocus] = spec{reflect.TypeFor[UIFocus](), RoleUI, false, false,
		"which session this UI shows and whether its user is looking"}
}

// UIFocus is ui.focus: the session a UI shows ("" for none) and whether
// the page is visible and focused. A UI sends it when either changes and
// after every (re)connection; it has no answer, and a session_id the UI
// may not see is answered with not_found. The master sends no Web Push
// notification of a session while some UI shows it focused.
type UIFocus struct {
	// SessionID is the session the page shows; empty for none.
	SessionID string `json:"session_id,omitempty" jsonschema:"maxLength=128"`
	// Focused is true while the page is visible and has the focus.
	Focused bool `json:"focused"`
}
