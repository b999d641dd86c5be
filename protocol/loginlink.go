package protocol

import "reflect"

// The login link a UI asks for to sign another device in ("Open on your
// phone"): ui.login_link.create, answered with master.login_link.
const (
	TypeLoginLinkCreate = "ui.login_link.create"
	TypeLoginLink       = "master.login_link"
)

func init() {
	registry[TypeLoginLinkCreate] = spec{reflect.TypeFor[LoginLinkCreate](), RoleUI, false, false,
		"ask for a fresh one-time login link for another device"}
	registry[TypeLoginLink] = spec{reflect.TypeFor[LoginLink](), RoleMaster, false, true,
		"a one-time login link and when it expires"}
}

// LoginLinkCreate is ui.login_link.create: the master issues a one-time
// login token with a short life, seeing the machines the asking UI's token
// sees (never more), and answers with master.login_link. More than five
// in a minute on one connection are refused with busy.
type LoginLinkCreate struct{}

// LoginLink is master.login_link, the answer to ui.login_link.create.
type LoginLink struct {
	// URL signs one browser in, once, until ExpiresAt. Its origin is the
	// master's public URL when one is configured, else the origin the
	// asking UI reached the master at.
	URL string `json:"url" jsonschema:"maxLength=4096"`
	// ExpiresAt is when the link stops working if unused (RFC 3339, UTC).
	ExpiresAt string `json:"expires_at" jsonschema:"format=date-time"`
	// Loopback is true when the URL names this computer only (localhost,
	// 127.0.0.1): another device cannot open it, and the UI says so.
	Loopback bool `json:"loopback,omitempty"`
}
