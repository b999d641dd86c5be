// Package web is ferry's browser UI, embedded into the binary and served by
// the master at "/" (Config.UI of internal/master).
//
// The UI is static: one HTML page, a style sheet and plain ES modules
// (static/js), plus four vendored libraries checked in with their licences
// (static/vendor: marked for Markdown, DOMPurify to sanitise what marked
// produces, highlight.js for code, qrcode-generator for "Open on your
// phone"). There is no build step and nothing is
// fetched from another origin, so `go run ./cmd/ferry up` serves the whole
// UI on a fresh machine. The page talks to the master over the UI WebSocket
// (/v1/ui) in the protocol of docs/protocol.md; see docs/ui.md for what it
// does.
//
// Handler's guarantees:
//
//   - GET / serves the page; every other file lives under
//     /assets/<version>/, where version is a hash of every embedded file, so
//     assets are cached for a year (immutable) and a new binary's assets are
//     new URLs. The page itself is revalidated on every load (no-cache, with
//     an ETag). An asset asked for under another version is still served,
//     with no-cache, so a page of an older binary keeps working.
//   - Content types come from a fixed table, never from the system's MIME
//     database or from sniffing (X-Content-Type-Options: nosniff).
//   - Every answer carries a strict Content-Security-Policy: scripts, styles,
//     images, fonts and connections from the page's own origin only, no
//     inline script or style, no eval, no frames, no plugins, and Trusted
//     Types required for every HTML sink and script URL (the UI's two
//     policies: "dompurify" runs DOMPurify, "ferry-worker" passes only the
//     service worker's URL, /sw.js). It also denies framing and sends no
//     referrer.
//   - Text files are served gzip-compressed to clients that accept it,
//     compressed once, on first use.
//   - GET /sw.js serves the service worker (static/sw.js) from the root, so
//     its scope is the whole app, with no-cache (a new binary's worker is
//     seen at the next load), Service-Worker-Allowed "/" and its own policy.
//     The Go side fills in its CONFIG: the assets' version (the cache's
//     name, so a new binary replaces the cache), the versioned assets path,
//     the files of the app shell it keeps for offline use and the page's
//     policy (for the offline page it makes). GET /swpush.js, the push
//     handler the worker imports, is served beside it the same way. See
//     docs/ui.md, "Install the app", and docs/notifications.md.
//   - Only GET and HEAD are answered (405 otherwise); unknown paths are 404.
package web

//go:generate go run ./internal/icon/gen

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
)

//go:embed static
var static embed.FS

// AssetsPrefix is the path under which the UI's files are served, followed by
// the version and the file's path in static/.
const AssetsPrefix = "/assets/"

// assetsPlaceholder is replaced in index.html by the versioned assets path.
const assetsPlaceholder = "{{ASSETS}}"

// ContentSecurityPolicy is the policy of every answer. 'self' in
// connect-src also covers the WebSocket (ws:/wss:) of the same host.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"font-src 'self'; connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; " +
	"frame-ancestors 'none'; require-trusted-types-for 'script'; trusted-types dompurify ferry-worker"

// WorkerPolicy is the Content-Security-Policy of the service worker's
// scripts (/sw.js, /swpush.js): they may import scripts and fetch from
// their own origin only. It has no Trusted Types requirement, which would
// refuse importScripts of a plain URL in the worker.
const WorkerPolicy = "default-src 'none'; script-src 'self'; connect-src 'self'"

// workerName is the service worker's file in static/, served at "/"+workerName.
const workerName = "sw.js"

// pushWorkerName is the push handler the worker imports, served at
// "/"+pushWorkerName: a worker script's URL must stay the same across
// versions, so it is not under AssetsPrefix.
const pushWorkerName = "swpush.js"

// workerConfig replaces workerPlaceholder in sw.js.
type workerConfig struct {
	Version string   `json:"version"`
	Assets  string   `json:"assets"`
	Shell   []string `json:"shell"`
	Policy  string   `json:"policy"`
}

const workerPlaceholder = "{{CONFIG}}"

// contentTypes maps file extensions to their Content-Type.
var contentTypes = map[string]string{
	".html":        "text/html; charset=utf-8",
	".js":          "text/javascript; charset=utf-8",
	".mjs":         "text/javascript; charset=utf-8",
	".css":         "text/css; charset=utf-8",
	".svg":         "image/svg+xml",
	".png":         "image/png",
	".webmanifest": "application/manifest+json",
	".json":        "application/json",
	".md":          "text/plain; charset=utf-8",
	".txt":         "text/plain; charset=utf-8",
	"":             "text/plain; charset=utf-8", // LICENSE files
}

// asset is one embedded file, ready to serve.
type asset struct {
	body  []byte
	gz    []byte // nil when compression does not pay
	ctype string
	etag  string
}

type site struct {
	version string
	index   *asset
	worker  *asset
	files   map[string]*asset // by path below static/
}

var load = sync.OnceValue(func() *site {
	s, err := build(static)
	if err != nil {
		panic("web: the embedded UI is broken: " + err.Error()) // caught by the package's tests
	}
	return s
})

// build reads every file of the embedded tree, hashes them into the version
// and prepares the page.
func build(fsys fs.FS) (*site, error) {
	root, err := fs.Sub(fsys, "static")
	if err != nil {
		return nil, err
	}
	s := &site{files: map[string]*asset{}}
	var names []string
	err = fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		names = append(names, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	all := sha256.New()
	for _, name := range names {
		b, err := fs.ReadFile(root, name)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		all.Write([]byte(name))
		all.Write(sum[:])
		ct, ok := contentTypes[path.Ext(name)]
		if !ok {
			ct = "application/octet-stream"
		}
		s.files[name] = &asset{body: b, ctype: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	}
	s.version = hex.EncodeToString(all.Sum(nil)[:6])
	idx, ok := s.files["index.html"]
	if !ok {
		return nil, fs.ErrNotExist
	}
	delete(s.files, "index.html")
	page := bytes.ReplaceAll(idx.body, []byte(assetsPlaceholder), []byte(AssetsPrefix+s.version))
	s.index = &asset{body: page, ctype: idx.ctype, etag: `"` + s.version + `"`}
	if s.worker, err = s.buildWorker(); err != nil {
		return nil, err
	}
	s.worker.gz = compress(s.worker)
	for _, a := range s.files {
		a.gz = compress(a)
	}
	s.index.gz = compress(s.index)
	return s, nil
}

// buildWorker takes sw.js out of the assets and fills in its CONFIG.
func (s *site) buildWorker() (*asset, error) {
	w, ok := s.files[workerName]
	if !ok {
		return nil, fs.ErrNotExist
	}
	delete(s.files, workerName)
	cfg := workerConfig{Version: s.version, Assets: AssetsPrefix + s.version, Shell: []string{}, Policy: ContentSecurityPolicy}
	for name := range s.files {
		if inShell(name) {
			cfg.Shell = append(cfg.Shell, name)
		}
	}
	sort.Strings(cfg.Shell)
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(w.body, []byte(workerPlaceholder)) {
		return nil, fmt.Errorf("%s lacks %s", workerName, workerPlaceholder)
	}
	body := bytes.Replace(w.body, []byte(workerPlaceholder), b, 1)
	return &asset{body: body, ctype: w.ctype, etag: `"` + s.version + `"`}, nil
}

// inShell reports whether the service worker keeps an asset for offline
// use: everything the page may load, not the licences and notes.
func inShell(name string) bool {
	switch path.Ext(name) {
	case ".js", ".mjs", ".css", ".svg", ".png", ".webmanifest":
		return true
	}
	return false
}

// compress returns a's body gzipped when it is text and that saves space.
func compress(a *asset) []byte {
	if !strings.HasPrefix(a.ctype, "text/") && !strings.Contains(a.ctype, "json") && a.ctype != "image/svg+xml" {
		return nil
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(a.body)
	_ = zw.Close()
	if buf.Len() >= len(a.body)*9/10 {
		return nil
	}
	return buf.Bytes()
}

// Version is the assets' version: a hash of every embedded file.
func Version() string { return load().version }

// Handler serves the UI: the page at "/", its files under AssetsPrefix.
func Handler() http.Handler {
	s := load()
	return http.HandlerFunc(s.serve)
}

func (s *site) serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=(), usb=()")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch p := r.URL.Path; {
	case p == "/" || p == "/index.html":
		h.Set("Cache-Control", "no-cache")
		s.write(w, r, s.index)
	case p == "/"+workerName || p == "/"+pushWorkerName:
		// The worker's own policy replaces the page's: Trusted Types
		// would refuse its importScripts of a plain URL.
		a := s.worker
		if p == "/"+pushWorkerName {
			if a = s.files[pushWorkerName]; a == nil {
				notFound(w)
				return
			}
		}
		h.Set("Content-Security-Policy", WorkerPolicy)
		h.Set("Service-Worker-Allowed", "/")
		h.Set("Cache-Control", "no-cache")
		s.write(w, r, a)
	case p == "/favicon.ico":
		// Browsers ask for it whatever the page says; the page names an SVG.
		http.Redirect(w, r, AssetsPrefix+s.version+"/favicon.svg", http.StatusMovedPermanently)
	case strings.HasPrefix(p, AssetsPrefix):
		version, name, ok := strings.Cut(strings.TrimPrefix(p, AssetsPrefix), "/")
		a := s.files[name]
		if !ok || a == nil {
			notFound(w)
			return
		}
		if version == s.version {
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			h.Set("Cache-Control", "no-cache")
		}
		s.write(w, r, a)
	default:
		notFound(w)
	}
}

func notFound(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, "not found", http.StatusNotFound)
}

// write answers with a, compressed when the client accepts gzip, or 304 when
// the client holds it already.
func (s *site) write(w http.ResponseWriter, r *http.Request, a *asset) {
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("ETag", a.etag)
	if a.gz != nil {
		h.Add("Vary", "Accept-Encoding")
	}
	if etagMatch(r.Header.Get("If-None-Match"), a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := a.body
	if a.gz != nil && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		body = a.gz
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// etagMatch reports whether an If-None-Match header names etag (weakly).
func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

// acceptsGzip reports whether an Accept-Encoding header accepts gzip (a
// q=0 refuses it).
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
			continue
		}
		q, ok := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q=")
		if !ok {
			return true
		}
		f, err := strconv.ParseFloat(q, 64)
		return err == nil && f > 0
	}
	return false
}
