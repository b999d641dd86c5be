package web_test

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/web"
	"github.com/ferry-dev/ferry/web/internal/icon"
)

// TestServiceWorker: /sw.js is served from the root, as JavaScript, never
// cached by HTTP, under its own policy, with its CONFIG filled in: the
// version (its cache's name), the versioned assets path, and an app shell
// that holds the page's modules, style and icons (each of which answers)
// but no licence or note. It is not also an asset.
func TestServiceWorker(t *testing.T) {
	h := web.Handler()
	r := get(t, h, http.MethodGet, "/sw.js", map[string]string{"Accept-Encoding": "gzip"})
	if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "text/javascript; charset=utf-8" {
		t.Fatalf("GET /sw.js: %d %q", r.StatusCode, r.Header.Get("Content-Type"))
	}
	if cc := r.Header.Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("/sw.js Cache-Control %q, want no-cache", cc)
	}
	if p := r.Header.Get("Content-Security-Policy"); p != web.WorkerPolicy || strings.Contains(p, "trusted-types") {
		t.Errorf("/sw.js policy %q", p)
	}
	if !strings.HasPrefix(r.Body, "importScripts('/swpush.js');\n") {
		t.Errorf("sw.js must load the push worker first; it starts %.80q", r.Body)
	}
	m := regexp.MustCompile(`(?m)^const CONFIG = (\{.*\});$`).FindStringSubmatch(r.Body)
	if m == nil || strings.Contains(r.Body, "{{") {
		t.Fatalf("sw.js has no CONFIG filled in:\n%.600s", r.Body)
	}
	var cfg struct {
		Version string   `json:"version"`
		Assets  string   `json:"assets"`
		Shell   []string `json:"shell"`
		Policy  string   `json:"policy"`
	}
	if err := json.Unmarshal([]byte(m[1]), &cfg); err != nil {
		t.Fatalf("CONFIG %s: %v", m[1], err)
	}
	if cfg.Version != web.Version() || cfg.Assets != web.AssetsPrefix+web.Version() || cfg.Policy != web.ContentSecurityPolicy {
		t.Errorf("CONFIG %+v, want version %s", cfg, web.Version())
	}
	for _, want := range []string{"js/main.js", "js/app.js", "js/worker.js", "js/offline.js", "app.css", "favicon.svg", "manifest.webmanifest",
		"icons/icon-192.png", "vendor/dompurify/purify.es.mjs"} {
		if !slices.Contains(cfg.Shell, want) {
			t.Errorf("the shell lacks %s: %v", want, cfg.Shell)
		}
	}
	for _, f := range cfg.Shell {
		if strings.Contains(f, "LICENSE") || strings.HasSuffix(f, ".md") || f == "sw.js" || f == "index.html" {
			t.Errorf("the shell holds %s", f)
		}
		if a := get(t, h, http.MethodHead, cfg.Assets+"/"+f, nil); a.StatusCode != http.StatusOK {
			t.Errorf("shell file %s: %d", f, a.StatusCode)
		}
	}
	if a := get(t, h, http.MethodGet, web.AssetsPrefix+web.Version()+"/sw.js", nil); a.StatusCode != http.StatusNotFound {
		t.Errorf("sw.js as an asset: %d, want 404", a.StatusCode)
	}
	if post := get(t, h, http.MethodPost, "/sw.js", nil); post.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /sw.js: %d", post.StatusCode)
	}
}

// TestManifest: the page links a manifest complete enough to install the
// app (name, start_url, scope, standalone, colours, PNG icons of 192 and
// 512 pixels for "any" and "maskable", an SVG) and an apple-touch-icon;
// every icon is served and is a PNG of the size it claims.
func TestManifest(t *testing.T) {
	h := web.Handler()
	page := get(t, h, http.MethodGet, "/", nil).Body
	base := web.AssetsPrefix + web.Version() + "/"
	link := func(rel string) string {
		m := regexp.MustCompile(`<link rel="` + rel + `" href="([^"]+)"`).FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("the page links no %s", rel)
		}
		return m[1]
	}
	mf := get(t, h, http.MethodGet, link("manifest"), nil)
	if mf.StatusCode != http.StatusOK || mf.Header.Get("Content-Type") != "application/manifest+json" {
		t.Fatalf("manifest: %d %q", mf.StatusCode, mf.Header.Get("Content-Type"))
	}
	var man struct {
		Name            string `json:"name"`
		ShortName       string `json:"short_name"`
		StartURL        string `json:"start_url"`
		Scope           string `json:"scope"`
		Display         string `json:"display"`
		BackgroundColor string `json:"background_color"`
		ThemeColor      string `json:"theme_color"`
		Icons           []struct {
			Src     string `json:"src"`
			Sizes   string `json:"sizes"`
			Type    string `json:"type"`
			Purpose string `json:"purpose"`
		} `json:"icons"`
	}
	if err := json.Unmarshal([]byte(mf.Body), &man); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	if man.Name != "ferry" || man.ShortName == "" || man.StartURL != "/" || man.Scope != "/" || man.Display != "standalone" ||
		!regexp.MustCompile(`^#[0-9a-f]{6}$`).MatchString(man.ThemeColor) || !regexp.MustCompile(`^#[0-9a-f]{6}$`).MatchString(man.BackgroundColor) {
		t.Errorf("manifest %+v", man)
	}
	have := map[string]bool{}
	for _, ic := range man.Icons {
		have[ic.Purpose+" "+ic.Sizes+" "+ic.Type] = true
		r := get(t, h, http.MethodGet, base+ic.Src, nil)
		if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != ic.Type {
			t.Errorf("icon %s: %d %q, want %s", ic.Src, r.StatusCode, r.Header.Get("Content-Type"), ic.Type)
			continue
		}
		if ic.Type == "image/png" {
			checkPNG(t, ic.Src, []byte(r.Body), ic.Sizes)
		}
	}
	for _, want := range []string{"any 192x192 image/png", "any 512x512 image/png", "maskable 192x192 image/png",
		"maskable 512x512 image/png", "any any image/svg+xml"} {
		if !have[want] {
			t.Errorf("the manifest lacks a %s icon: %v", want, have)
		}
	}
	apple := get(t, h, http.MethodGet, link("apple-touch-icon"), nil)
	if apple.StatusCode != http.StatusOK {
		t.Fatalf("apple-touch-icon: %d", apple.StatusCode)
	}
	checkPNG(t, "apple-touch-icon", []byte(apple.Body), "180x180")
}

func checkPNG(t *testing.T, name string, b []byte, sizes string) {
	t.Helper()
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		t.Errorf("%s is not a PNG: %v", name, err)
		return
	}
	if got := strconv.Itoa(cfg.Width) + "x" + strconv.Itoa(cfg.Height); got != sizes {
		t.Errorf("%s is %s, it claims %s", name, got, sizes)
	}
}

// TestIconsUpToDate: the checked-in PNGs are what package icon draws
// (go generate ./web writes them), and they are real pictures: the tile's
// teal and the boat's white are both there, the corners of an "any" icon
// transparent, those of a maskable one opaque.
func TestIconsUpToDate(t *testing.T) {
	for _, f := range icon.Files {
		b, err := os.ReadFile(filepath.Join("static", filepath.FromSlash(f.Name)))
		if err != nil {
			t.Fatalf("%v (run go generate ./web)", err)
		}
		got, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		want := icon.Draw(f.Size, f.Kind)
		if !samePixels(got, want) {
			t.Errorf("%s differs from what package icon draws: run go generate ./web", f.Name)
		}
		_, _, _, corner := got.At(0, 0).RGBA()
		if (f.Kind == icon.Any) != (corner == 0) {
			t.Errorf("%s: corner alpha %d", f.Name, corner)
		}
		r, g, bl, _ := got.At(f.Size/2, f.Size*45/64).RGBA() // the hull
		if r>>8 != 0xff || g>>8 != 0xff || bl>>8 != 0xff {
			t.Errorf("%s: the hull is not white", f.Name)
		}
		r, g, bl, _ = got.At(f.Size/10, f.Size/2).RGBA() // the tile
		if r>>8 != 0x0b || g>>8 != 0x6e || bl>>8 != 0x69 {
			t.Errorf("%s: the tile is not teal", f.Name)
		}
	}
}

func samePixels(a, b image.Image) bool {
	if a.Bounds() != b.Bounds() {
		return false
	}
	for y := a.Bounds().Min.Y; y < a.Bounds().Max.Y; y++ {
		for x := a.Bounds().Min.X; x < a.Bounds().Max.X; x++ {
			r1, g1, b1, a1 := a.At(x, y).RGBA()
			r2, g2, b2, a2 := b.At(x, y).RGBA()
			if r1 != r2 || g1 != g2 || b1 != b2 || a1 != a2 {
				return false
			}
		}
	}
	return true
}
