package master

// Login: the one-time login link becomes a browser session in two steps.
//
//   - GET /login?token=… consumes nothing (a link preview that fetches the
//     URL leaves it usable). For a valid link it answers a small page of the
//     master's origin whose form POSTs the token back. When the browser says
//     the person opened the link themselves (Sec-Fetch-Site: none — typed,
//     a bookmark, a terminal — or same-origin: ferry's own sign-in form) the
//     page submits itself. When it came from another site (cross-site,
//     same-site: another port of this host, or no Sec-Fetch-Site at all) the
//     page asks first, and says so when this browser holds a session it
//     would replace: a link planted elsewhere cannot silently swap the
//     user's session for another.
//   - POST /login, from a page of the master's own origin only (Origin
//     checked, so another site cannot post a form here), consumes the
//     token, sets the cookie share and answers a page that stores the key
//     share in localStorage and goes to /. This answer is the only place
//     the key share ever leaves the master.

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"html"
	"io"
	"net/http"
	"strings"

	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// KeyStorage is the localStorage item that holds the key share.
const KeyStorage = "ferry.key"

// loginScript fills in what the login page needs from the browser and, on
// a page that may, submits it.
const loginScript = `(function(){var f=document.getElementById('login');var k=null;` +
	`try{k=localStorage.getItem('` + KeyStorage + `')}catch(e){}` +
	`if(k){var r=document.getElementById('replace');if(r)r.hidden=false}` +
	`if(f.dataset.auto==='1'){document.getElementById('busy').hidden=false;f.submit()}})();`

// sessionScript stores the key share and opens the UI.
const sessionScript = `(function(){var k=document.getElementById('session').dataset.key;` +
	`try{localStorage.setItem('` + KeyStorage + `',k)}catch(e){document.getElementById('nostore').hidden=false;return}` +
	`location.replace('/')})();`

func scriptHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "'"
}

// pageCSP allows one inline script, by its hash, the master's own
// stylesheet (LoginStylePath) and images (the app's icon), and nothing
// from anywhere else: no inline style.
func pageCSP(script string) string {
	return "default-src 'none'; script-src " + scriptHash(script) + "; style-src 'self'; img-src 'self'; " +
		"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
}

// LoginStylePath is where the master serves the style sheet of its own
// pages (sign-in, signed in, a login link that does not work): the web
// UI's look (its header, colours, light and dark) for pages that are not
// the UI's, under a policy without inline style.
const LoginStylePath = "/login.css"

// loginLogo is the app's icon, as the UI serves it (/favicon.ico leads to
// its SVG); a master without the UI shows the word alone.
const loginLogo = "/favicon.ico"

// loginStyle is served at LoginStylePath. Its colours are the UI's
// (web/static/app.css), which meet WCAG AA contrast in both schemes.
const loginStyle = `:root{--bg:#fff;--surface:#f6f8fa;--fg:#1b1f23;--muted:#57606a;--border:#d0d7de;--accent:#0b6e69;--accent-fg:#fff;--link:#0a5f5b;--focus:#0969da;color-scheme:light dark}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--surface:#161b22;--fg:#e6edf3;--muted:#9ea7b3;--border:#3d444d;--accent:#5cc8c0;--accent-fg:#06201e;--link:#5cc8c0;--focus:#58a6ff}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;-webkit-text-size-adjust:100%}
.topbar{display:flex;align-items:center;gap:.6rem;padding:.35rem .75rem;border-bottom:1px solid var(--border);background:var(--surface);min-height:3rem}
.brand{display:inline-flex;align-items:center;gap:.45rem;font-weight:700;font-size:1.1rem;color:var(--fg);text-decoration:none}
.logo{width:22px;height:22px;display:block}
main{display:block;max-width:40rem;margin:1.5rem auto;padding:0 1rem}
.panel{padding:1.25rem 1.5rem;background:var(--surface);border:1px solid var(--border);border-radius:12px}
h1{margin:0 0 .6rem;font-size:1.5rem;line-height:1.25}
a{color:var(--link)}
code{font-family:ui-monospace,SFMono-Regular,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:.9em;background:var(--bg);border:1px solid var(--border);border-radius:4px;padding:0 .25rem;overflow-wrap:anywhere}
form{display:flex;flex-wrap:wrap;align-items:center;gap:.5rem 1rem;margin-top:1rem}
button{font:inherit;min-height:2.25rem;padding:.3rem .9rem;border-radius:8px;border:1px solid var(--accent);background:var(--accent);color:var(--accent-fg);cursor:pointer}
:focus-visible{outline:2px solid var(--focus);outline-offset:2px}
[hidden]{display:none!important}
@media (pointer:coarse){button{min-height:44px}}
`

// serveLoginStyle answers GET LoginStylePath.
func serveLoginStyle(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/css; charset=utf-8")
	h.Set("Cache-Control", "public, max-age=3600")
	h.Set("X-Content-Type-Options", "nosniff")
	if r.Method != http.MethodHead {
		_, _ = io.WriteString(w, loginStyle)
	}
}

func pageHeaders(w http.ResponseWriter, csp string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	// The login page's URL holds the login token: it goes to no other
	// origin. (no-referrer would also make the form's POST carry
	// "Origin: null", which the POST refuses.)
	h.Set("Referrer-Policy", "same-origin")
}

// pageStart opens a page of the master: its head, the UI's header (the
// app's icon and name, leading to the UI) and the main panel.
func pageStart(title string) string {
	return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>` + html.EscapeString(title) + `</title><link rel="stylesheet" href="` + LoginStylePath + `"></head><body>
<header class="topbar"><a class="brand" href="/" aria-label="ferry: home"><img class="logo" src="` + loginLogo + `" alt="" width="22" height="22">ferry</a></header>
<main class="panel">
`
}

// opensItself reports whether the browser says the person opened the link
// themselves rather than another site sending them.
func opensItself(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "none", "same-origin":
		return true
	}
	return false
}

// serveLogin answers GET /login?token=…; it never consumes the token.
func (m *Master) serveLogin(w http.ResponseWriter, r *http.Request) {
	secret := r.URL.Query().Get("token")
	if _, err := auth.Verify(r.Context(), m.st, secret, store.TokenLogin); err != nil {
		m.loginFailed(w, r, err)
		return
	}
	auto := opensItself(r)
	var b strings.Builder
	b.WriteString(pageStart("ferry: sign in"))
	if auto {
		b.WriteString(`<h1>Sign in to ferry</h1>
<p id="busy" hidden>Signing in…</p>
`)
	} else {
		b.WriteString(`<h1>Sign in to ferry?</h1>
<p>You opened a ferry login link from another page. Sign in only if you asked for this link yourself.</p>
`)
	}
	b.WriteString(`<p id="replace" hidden><strong>This browser is signed in to ferry already.</strong> Signing in with this link replaces that session.</p>
<form id="login" method="post" action="/login"`)
	if auto {
		b.WriteString(` data-auto="1"`)
	}
	b.WriteString(`><input type="hidden" name="token" value="` + html.EscapeString(secret) + `">
<button type="submit">Sign in</button><a href="/">Keep things as they are</a></form>
<script>` + loginScript + `</script>
</main></body></html>
`)
	pageHeaders(w, pageCSP(loginScript))
	_, _ = io.WriteString(w, b.String())
}

// serveLoginPost answers POST /login from the login page: it consumes the
// token and hands the browser its two shares.
func (m *Master) serveLoginPost(w http.ResponseWriter, r *http.Request) {
	v := m.view(r)
	if !v.SameOrigin(r.Header.Get("Origin")) {
		m.log.Info("refused a login posted from another origin", "remote", m.remote(r))
		httpError(w, http.StatusForbidden, protocol.CodeUnauthorized, "a login must be posted from the master's own login page")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		httpError(w, http.StatusBadRequest, protocol.CodeInvalidValue, "the login form could not be read")
		return
	}
	secret, err := auth.ExchangeLogin(r.Context(), m.st, r.PostForm.Get("token"), auth.WithDevice(DeviceLabel(r.UserAgent())))
	if err != nil {
		m.loginFailed(w, r, err)
		return
	}
	cookie, key, err := SplitUISecret(secret)
	if err != nil {
		m.log.Error("login", "err", err)
		httpError(w, http.StatusInternalServerError, protocol.CodeInternal, "internal error")
		return
	}
	m.setSessionCookie(w, r, cookie, auth.UITTL)
	pageHeaders(w, pageCSP(sessionScript))
	_, _ = io.WriteString(w, pageStart("ferry: signed in")+`<h1>Signed in</h1>
<p id="session" data-key="`+html.EscapeString(key)+`"><a href="/">Go to ferry</a></p>
<p id="nostore" hidden>This browser does not let ferry keep its sign-in (private browsing may forbid site storage). Allow site data for this address and open a new login link.</p>
<script>`+sessionScript+`</script>
</main></body></html>
`)
}

// loginFailed answers a login link that does not work.
func (m *Master) loginFailed(w http.ResponseWriter, r *http.Request, err error) {
	if !errors.Is(err, auth.ErrUnauthorized) {
		m.log.Error("login", "err", err)
		httpError(w, http.StatusInternalServerError, protocol.CodeInternal, "internal error")
		return
	}
	m.log.Info("refused login", "remote", m.remote(r))
	if r.Method == http.MethodPost || strings.Contains(r.Header.Get("Accept"), "text/html") {
		// A person clicked an old link: a page that says what to do,
		// rather than a JSON error.
		loginRefusedPage(w)
		return
	}
	httpError(w, http.StatusUnauthorized, protocol.CodeUnauthorized, "this login link is invalid, expired or already used")
}

// loginRefusedPage answers a browser whose login link did not work: static
// text, no script, nothing from the request echoed back.
func loginRefusedPage(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = io.WriteString(w, loginRefusedHTML)
}

// loginRefusedHTML is styled as the login pages are (LoginStylePath: both
// colour schemes, a link readable in each).
var loginRefusedHTML = pageStart("ferry: this login link does not work") + `<h1>This login link does not work</h1>
<p>It is invalid, expired or already used: each link signs in one browser, once.</p>
<p>Ask for a new one where ferry runs: <code>ferry token create --kind login</code>, then open
<code>/login?token=…</code> with what it prints. If you are signed in already, <a href="/">go to ferry</a>.</p>
</main></body></html>
`
