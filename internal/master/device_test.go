package master_test

import (
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/store"
)

// TestSignInNamesDevice: signing in stores with the UI token a short name
// of the browser, from its User-Agent in ferry's own words; a hostile
// User-Agent (bidi and control characters, 10 KB) stores one of those
// words, nothing of its own.
func TestSignInNamesDevice(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	for _, c := range []struct{ ua, want string }{
		{"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36", "Chrome on Android"},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1", "Safari on iPhone"},
		{"Mozilla/5.0 (X11; Linux x86_64; rv:127.0) Gecko/20100101 Firefox/127.0", "Firefox on Linux"},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.0.0", "Edge on Windows"},
		{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36", "Chrome on macOS"},
		{"curl/8.5.0", "a browser"},
		{"", "a browser"},
		// Bidi overrides and a tab around words ferry knows: only the words.
		{"\u202eChrome/1 \u2066evil\u2069\tAndroid \u200f<script>", "Chrome on Android"},
		{strings.Repeat("\u202eA", 5000), "a browser"},
		{strings.Repeat("x", 10<<10) + " Firefox/1", "Firefox"},
	} {
		login, _, err := auth.Issue(testCtx(t), e.st, store.TokenLogin, "login URL", auth.LoginTTL)
		if err != nil {
			t.Fatal(err)
		}
		before := uiTokenIDs(t, e.st)
		resp, page := e.postLogin(login, e.srv.URL, http.Header{"User-Agent": {c.ua}})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("login with User-Agent %.40q: HTTP %d\n%s", c.ua, resp.StatusCode, page)
		}
		var made []store.Token
		toks, err := e.st.ListTokens(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range toks {
			if tk.Kind == store.TokenUI && !slices.Contains(before, tk.ID) {
				made = append(made, tk)
			}
		}
		if len(made) != 1 || made[0].Device != c.want {
			t.Errorf("sign-in with User-Agent %.60q made UI tokens %+v, want one named %q", c.ua, made, c.want)
		}
	}
}

func uiTokenIDs(t *testing.T, st store.Store) []string {
	t.Helper()
	toks, err := st.ListTokens(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tk := range toks {
		if tk.Kind == store.TokenUI {
			ids = append(ids, tk.ID)
		}
	}
	return ids
}

// TestDeviceLabelFixedWords: whatever the User-Agent (control characters
// an HTTP client would not even send, random bytes, known words in any
// mix), the name is at most 40 bytes of printable ASCII and made of
// ferry's own words only.
func TestDeviceLabelFixedWords(t *testing.T) {
	t.Parallel()
	words := []string{"Edge", "Opera", "Samsung Internet", "Firefox", "Chrome", "Safari",
		"iPhone", "iPad", "Android", "ChromeOS", "Windows", "macOS", "Linux", "a browser", "on"}
	pieces := []string{"Edg/", "OPR/", "SamsungBrowser/", "Firefox/", "FxiOS/", "CriOS/", "Chrome/", "Safari/",
		"iPhone", "iPad", "Android", "CrOS", "Windows", "Macintosh", "Linux", "X11",
		"\x00", "\n", "\r\n", "\x1b[31m", "\u202e", "\u2066", "\ufeff", "\xff", "<b>", " on ", "a browser"}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		ua := b.String()
		got := master.DeviceLabel(ua)
		rest := got
		for _, w := range slices.Backward(sortedByLen(words)) {
			rest = strings.ReplaceAll(rest, w, "")
		}
		if len(got) == 0 || len(got) > 40 || strings.TrimSpace(rest) != "" {
			t.Fatalf("case %d: DeviceLabel(%q) = %q, not made of ferry's words alone", i, ua, got)
		}
	}
}

// sortedByLen sorts words shortest first, so that removing them longest
// first takes "ChromeOS" before "Chrome".
func sortedByLen(words []string) []string {
	out := slices.Clone(words)
	slices.SortStableFunc(out, func(a, b string) int { return len(a) - len(b) })
	return out
}
