package web_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/web"
)

// answer is a response, its body read (and gunzipped).
type answer struct {
	StatusCode int
	Header     http.Header
	Body       string
}

func get(t *testing.T, h http.Handler, method, target string, hdr map[string]string) answer {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := rec.Result()
	defer func() { _ = res.Body.Close() }()
	var rd io.Reader = res.Body
	if res.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		rd = zr
	}
	b, err := io.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	return answer{StatusCode: res.StatusCode, Header: res.Header, Body: string(b)}
}

func TestPage(t *testing.T) {
	h := web.Handler()
	r := get(t, h, http.MethodGet, "/", nil)
	page := r.Body
	if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /: %d %s", r.StatusCode, r.Header.Get("Content-Type"))
	}
	for k, want := range map[string]string{
		"Cache-Control":           "no-cache",
		"X-Content-Type-Options":  "nosniff",
		"X-Frame-Options":         "DENY",
		"Referrer-Policy":         "no-referrer",
		"Content-Security-Policy": web.ContentSecurityPolicy,
	} {
		if got := r.Header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	csp := web.ContentSecurityPolicy
	for _, must := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "require-trusted-types-for 'script'"} {
		if !strings.Contains(csp, must) {
			t.Errorf("the CSP lacks %q", must)
		}
	}
	if strings.Contains(csp, "unsafe") || strings.Contains(csp, "http") {
		t.Errorf("the CSP allows too much: %s", csp)
	}
	if strings.Contains(page, "{{") || !strings.Contains(page, web.AssetsPrefix+web.Version()+"/js/main.js") {
		t.Fatalf("the page does not name its versioned assets:\n%s", page)
	}
	// No inline script or style, no other origin.
	if regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`).MatchString(page) || strings.Contains(page, "<style") || strings.Contains(page, " style=") ||
		regexp.MustCompile(`(?:src|href)="(?:https?:)?//`).MatchString(page) {
		t.Fatalf("the page has inline code or names another origin:\n%s", page)
	}
	// Revalidation and compression.
	if r2 := get(t, h, http.MethodGet, "/", map[string]string{"If-None-Match": r.Header.Get("ETag")}); r2.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: %d", r2.StatusCode)
	}
	gz := get(t, h, http.MethodGet, "/", map[string]string{"Accept-Encoding": "br, gzip"})
	if gz.Header.Get("Content-Encoding") != "gzip" || gz.Body != page {
		t.Errorf("gzip: %q", gz.Header.Get("Content-Encoding"))
	}
	if no := get(t, h, http.MethodGet, "/", map[string]string{"Accept-Encoding": "gzip;q=0"}); no.Header.Get("Content-Encoding") != "" {
		t.Error("gzip;q=0 still got gzip")
	}
	if head := get(t, h, http.MethodHead, "/", nil); head.StatusCode != http.StatusOK || head.Body != "" {
		t.Errorf("HEAD: %d", head.StatusCode)
	}
	if post := get(t, h, http.MethodPost, "/", nil); post.StatusCode != http.StatusMethodNotAllowed || post.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d", post.StatusCode)
	}
	for _, p := range []string{"/nope", "/assets/", "/assets/" + web.Version() + "/nope.js", "/assets/" + web.Version() + "/index.html",
		"/assets/" + web.Version() + "/../web.go", "/static/js/main.js"} {
		if r := get(t, h, http.MethodGet, p, nil); r.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, r.StatusCode)
		}
	}
	if r := get(t, h, http.MethodGet, "/favicon.ico", nil); r.StatusCode != http.StatusMovedPermanently {
		t.Errorf("favicon.ico: %d", r.StatusCode)
	}
}

func TestAssets(t *testing.T) {
	h := web.Handler()
	v := web.Version()
	for p, ct := range map[string]string{
		"js/main.js":                        "text/javascript; charset=utf-8",
		"vendor/dompurify/purify.es.mjs":    "text/javascript; charset=utf-8",
		"app.css":                           "text/css; charset=utf-8",
		"favicon.svg":                       "image/svg+xml",
		"manifest.webmanifest":              "application/manifest+json",
		"vendor/marked/LICENSE.md":          "text/plain; charset=utf-8",
		"vendor/highlight/LICENSE":          "text/plain; charset=utf-8",
		"vendor/highlight/highlight.min.js": "text/javascript; charset=utf-8",
	} {
		r := get(t, h, http.MethodGet, web.AssetsPrefix+v+"/"+p, nil)
		if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != ct {
			t.Errorf("%s: %d %q, want %q", p, r.StatusCode, r.Header.Get("Content-Type"), ct)
		}
		if cc := r.Header.Get("Cache-Control"); cc != "public, max-age=31536000, immutable" {
			t.Errorf("%s: Cache-Control %q", p, cc)
		}
		if r.Header.Get("Content-Security-Policy") == "" {
			t.Errorf("%s: no CSP", p)
		}
	}
	// Another version (a page of an older binary) still loads, uncached.
	if r := get(t, h, http.MethodGet, web.AssetsPrefix+"0ld/js/main.js", nil); r.StatusCode != http.StatusOK || r.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("old version: %d %q", r.StatusCode, r.Header.Get("Cache-Control"))
	}
}

// TestModulesResolve: every file the page, a module or the style sheet
// names exists among the embedded files, so nothing 404s in a browser.
func TestModulesResolve(t *testing.T) {
	root := os.DirFS("static")
	exists := func(p string) bool {
		_, err := fs.Stat(root, p)
		return err == nil
	}
	page, err := fs.ReadFile(root, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`\{\{ASSETS\}\}/([^"]+)"`).FindAllStringSubmatch(string(page), -1) {
		if !exists(m[1]) {
			t.Errorf("index.html names %s, which does not exist", m[1])
		}
	}
	imp := regexp.MustCompile(`(?:import|from)\s*\(?\s*['"](\.{1,2}/[^'"]+)['"]`)
	err = fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (!strings.HasSuffix(p, ".js") && !strings.HasSuffix(p, ".mjs")) || strings.HasPrefix(p, "vendor/") {
			return err
		}
		b, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		for _, m := range imp.FindAllStringSubmatch(string(b), -1) {
			if target := path.Join(path.Dir(p), m[1]); !exists(target) {
				t.Errorf("%s imports %s, which does not exist", p, m[1])
			}
		}
		// Text reaches the page as text: the only HTML sink is markdown.js,
		// behind DOMPurify (the page's Trusted Types policy enforces it).
		if p != "js/markdown.js" && bytes.Contains(b, []byte("innerHTML")) {
			t.Errorf("%s sets innerHTML", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join("static", "vendor", "README.md")); err != nil {
		t.Error("static/vendor/README.md should say what is vendored, from where, under which licence")
	}
}

// TestWorkerScripts: the service worker and its push handler are served
// at the root, revalidated, with scope "/" allowed and the worker policy
// (no Trusted Types, which would refuse importScripts); the page's
// policy allows the one Trusted Types policy that registers it.
func TestWorkerScripts(t *testing.T) {
	h := web.Handler()
	for _, p := range []string{"/sw.js", "/swpush.js"} {
		r := get(t, h, http.MethodGet, p, nil)
		if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "text/javascript; charset=utf-8" {
			t.Fatalf("GET %s: %d %s", p, r.StatusCode, r.Header.Get("Content-Type"))
		}
		for k, want := range map[string]string{
			"Service-Worker-Allowed":  "/",
			"Cache-Control":           "no-cache",
			"Content-Security-Policy": web.WorkerPolicy,
			"X-Content-Type-Options":  "nosniff",
		} {
			if got := r.Header.Get(k); got != want {
				t.Errorf("GET %s: %s = %q, want %q", p, k, got, want)
			}
		}
		if strings.Contains(r.Header.Get("Content-Security-Policy"), "trusted-types") {
			t.Errorf("GET %s: the worker policy requires Trusted Types", p)
		}
	}
	if sw := get(t, h, http.MethodGet, "/sw.js", nil).Body; !strings.Contains(sw, "importScripts('/swpush.js')") {
		t.Error("/sw.js does not import /swpush.js")
	}
	if r := get(t, h, http.MethodGet, "/worker.js", nil); r.StatusCode != http.StatusNotFound {
		t.Errorf("GET /worker.js: %d, want 404 (only the worker scripts are at the root)", r.StatusCode)
	}
	if !strings.Contains(web.ContentSecurityPolicy, "trusted-types dompurify ferry-worker") {
		t.Error("the page's policy does not allow the ferry-worker Trusted Types policy")
	}
}
