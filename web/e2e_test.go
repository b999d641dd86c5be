package web_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/cli"
	"github.com/ferry-dev/ferry/internal/exectest"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// syncBuffer is a goroutine-safe writer `ferry up` prints to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// ferryUp runs `ferry up` in-process until the test ends and returns its
// base URL and login URL.
func ferryUp(t *testing.T, env map[string]string, args ...string) (base, login string) {
	t.Helper()
	base, login, _ = ferryUpStoppable(t, env, args...)
	return base, login
}

// ferryUpStoppable is ferryUp with a stop function, which stops `ferry up`
// (as Ctrl-C would) and waits for it; the test's end stops it otherwise.
func ferryUpStoppable(t *testing.T, env map[string]string, args ...string) (base, login string, stop func()) {
	t.Helper()
	base, login, stopErr, err := startUp(env, args...)
	if err != nil {
		t.Fatal(err)
	}
	stop = func() {
		if err := stopErr(); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(stop)
	return base, login, stop
}

// startUp runs `ferry up` in-process on 127.0.0.1 (a later --addr in args
// picks the port) and returns its base URL, its login URL and a function
// that stops it (as Ctrl-C would), waits for it and reports how it ended;
// calling that again reports the same.
func startUp(env map[string]string, args ...string) (base, login string, stop func() error, err error) {
	out, errb := &syncBuffer{}, &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, cli.Env{Stdout: out, Stderr: errb, Getenv: func(k string) string { return env[k] }},
			append([]string{"up", "--addr", "127.0.0.1:0"}, args...))
	}()
	var (
		once    sync.Once
		stopped error
	)
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case code := <-done:
				if code != cli.ExitOK {
					stopped = fmt.Errorf("ferry up exited %d: %s", code, errb.String())
				}
			case <-time.After(30 * time.Second):
				stopped = errors.New("ferry up did not stop")
			}
		})
		return stopped
	}
	re := regexp.MustCompile(`(http://127\.0\.0\.1:\d+)/login\?token=ferry_login_\S+`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m[1], m[0], stop, nil
		}
		select {
		case code := <-done:
			cancel()
			return "", "", nil, fmt.Errorf("ferry up exited %d: %s %s", code, out.String(), errb.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = stop()
			return "", "", nil, fmt.Errorf("ferry up printed no login URL: %s %s", out.String(), errb.String())
		}
	}
}

// ferryCLI runs one ferry command in-process and returns its output.
func ferryCLI(env map[string]string, args ...string) (string, error) {
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), cli.Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }}, args)
	if code != cli.ExitOK {
		return "", fmt.Errorf("ferry %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
	}
	return out.String(), nil
}

// newLogin runs `ferry token create --kind login` and returns the login
// token, the first of the two lines it prints (the second is the URL).
func newLogin(env map[string]string, db string) (string, error) {
	out, err := ferryCLI(env, "token", "create", "--kind", "login", "--db", db)
	if err != nil {
		return "", err
	}
	token, url, _ := strings.Cut(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(token, "ferry_login_") || !strings.Contains(url, "/login?token="+token) {
		return "", fmt.Errorf("ferry token create --kind login printed %q, want the token and its login URL", out)
	}
	return token, nil
}

// flowFile is what one browser flow works on: a file it picks and edits,
// and the artifact it gets.
type flowFile struct {
	Name      string `json:"name"`
	Query     string `json:"query"`      // the fuzzy query typed after @
	File      string `json:"file"`       // the file it must pick
	Old       string `json:"old"`        // what the Edit replaces
	New       string `json:"new"`        // with what
	Artifact  string `json:"artifact"`   // the file the agent hands over
	Content   string `json:"content"`    // its bytes
	Reply     string `json:"reply"`      // the turn's last text
	LongWords int    `json:"long_words"` // pieces of the long turns
	Drop      bool   `json:"drop"`       // also drop the connection mid-turn
	Deep      string `json:"deep"`       // an absolute path deep in the workspace, also read
}

// script queues the model's replies for one flow, in the order the flow
// sends its prompts (see e2e/ui.mjs).
func script(srv *fake.Server, f flowFile) {
	usage := llm.Usage{InputTokens: 1800, OutputTokens: 120}
	reads := []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": f.File}}}
	if f.Deep != "" {
		reads = append(reads, fake.ToolCall{Name: "Read", Input: map[string]any{"file_path": f.Deep}})
	}
	srv.Script(
		// Turn 1: read, edit (asks), write the artifact (asks), answer.
		fake.Reply{Text: []string{"I'll look ", "at the file ", "first."}, Delay: 120 * time.Millisecond,
			ToolCalls: reads, Usage: usage},
		fake.Reply{Text: []string{"Now fixing ", "the comparison."},
			ToolCalls: []fake.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": f.File, "old_string": f.Old, "new_string": f.New, "artifact": false}}}, Usage: usage},
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Write", Input: map[string]any{"file_path": f.Artifact, "content": f.Content}}}, Usage: usage},
		fake.Reply{Text: []string{f.Reply[:20], f.Reply[20:]}, Usage: usage},
		// Turn 2: streams, then hangs until cancelled.
		fake.Reply{Text: []string{"Starting a long ", "analysis of everything…"}, Hold: true},
		// Turn 3 (plan mode): a long answer, the page reloaded in the middle.
		fake.Reply{Text: words("r", f.LongWords), Delay: 100 * time.Millisecond, Usage: usage},
	)
	if f.Drop {
		// Turn 4: a long answer, the connection dropped in the middle.
		srv.Script(fake.Reply{Text: words("d", f.LongWords), Delay: 100 * time.Millisecond, Usage: usage})
	}
}

// words returns n pieces "p01 ", "p02 ", … so a gap or a duplicate shows.
func words(p string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%02d ", p, i+1)
	}
	return out
}

// deepFile is deep enough that its row on a phone cannot show it whole.
const deepFile = "src/app/features/navigation/routing/tables/router-table.ts"

// TestBrowser drives the UI in headless Chromium (Playwright) against a
// real `ferry up` whose agent talks to the fake Anthropic server: sign-in,
// the lists, a session with the @ picker, streaming, a diff, permission
// prompts, an artifact download, cancel, plan mode, a reload and a dropped
// connection mid-turn, on a desktop and on a phone viewport. See docs/ui.md.
func TestBrowser(t *testing.T) {
	node, chromium := browserDeps(t)
	dir := t.TempDir()
	ws := project(t, dir, map[string]string{
		"README.md":           "# project\n",
		"src/auth.ts":         "export function check(t: string) {\n  return t == expected\n}\n",
		"src/router.ts":       "export const routes = {\n  home: '/'\n}\n",
		"src/util/strings.ts": "export const trim = (s: string) => s.trim()\n",
		"docs/guide.md":       "# Guide\n",
		"src/undo.txt":        "alpha\nbeta\n",
		"src/rewind.txt":      "one\n",
		deepFile:              "export const table = []\n",
	})
	flows := []flowFile{
		{Name: "desktop", Query: "sauth", File: "src/auth.ts", Old: "t == expected", New: "t === expected",
			Artifact: "out/report.csv", Content: "region,sales\nnorth,10\nsouth,20\n",
			Reply: "Done: the check now uses `===`.\n\n```ts\nreturn t === expected\n```\n\nThe report is **out/report.csv**.", LongWords: 50, Drop: true},
		{Name: "phone", Query: "srout", File: "src/router.ts", Old: "home: '/'", New: "home: '/home'",
			Artifact: "out/routes.txt", Content: "home /home\n",
			Reply: "Done: the home route moved.\n\n- `home` → `/home`", LongWords: 40},
	}
	// The phone also reads a file by its absolute path: its row must show
	// it workspace-relative, cut from the left (docs/ui.md).
	flows[1].Deep = filepath.Join(ws, filepath.FromSlash(deepFile))
	srv := fake.New(t)
	for _, f := range flows {
		script(srv, f)
	}
	historyScript(srv)
	env := upEnv(dir, srv.URL())
	db := filepath.Join(dir, "ferry.db")
	base, login := ferryUp(t, env, "--db", db, "--workspace", ws, "--agent", "builtin", "--agent", "echo")

	// The harness serves the script two things only Go can do: fresh
	// login URLs and revoking every UI token.
	var mu sync.Mutex
	logins := []string{login}
	ctl := http.NewServeMux()
	ctl.HandleFunc("POST /login", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		secret, err := newLogin(env, db)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		u := base + "/login?token=" + strings.TrimSpace(secret)
		logins = append(logins, u)
		_, _ = w.Write([]byte(u))
	})
	ctl.HandleFunc("POST /revoke-ui", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		list, err := ferryCLI(env, "token", "list", "--db", db)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		n := 0
		for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
			cols := strings.Split(line, "\t")
			if len(cols) > 1 && cols[1] == "ui" {
				if _, err := ferryCLI(env, "token", "revoke", "--db", db, cols[0]); err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
				n++
			}
		}
		_, _ = fmt.Fprint(w, n)
	})
	// The control server also plays another local server, as a dev server
	// the agent started would be: the browser sends it ferry's cookie
	// (cookies ignore ports). /probe records it and may plant a login link;
	// /replay tries the cookie against the master with forged headers.
	var leaked string
	ctl.HandleFunc("GET /probe", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		leaked = r.Header.Get("Cookie")
		link := ""
		if r.URL.Query().Get("link") != "" {
			secret, err := newLogin(env, db)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			link = fmt.Sprintf(`<p><a id="go" href="%s/login?token=%s">open ferry</a></p>`, base, strings.TrimSpace(secret))
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = fmt.Fprintf(w, "<!doctype html><title>a dev server</title><p>another server on this host</p>%s", link)
	})
	ctl.HandleFunc("POST /replay", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		cookie := leaked
		mu.Unlock()
		if !strings.Contains(cookie, "ferry_session_") {
			http.Error(w, "the other server got no ferry_session_… cookie: "+cookie, http.StatusInternalServerError)
			return
		}
		var got []string
		for _, protos := range [][]string{nil, {"ferry.ui"}} {
			ws, resp, err := websocket.Dial(r.Context(), "ws"+strings.TrimPrefix(base, "http")+"/v1/ui", &websocket.DialOptions{
				HTTPHeader:   http.Header{"Cookie": {cookie}, "Origin": {base}, "Sec-Fetch-Site": {"same-origin"}},
				Subprotocols: protos,
			})
			if resp != nil && resp.Body != nil {
				_ = resp.Body.Close()
			}
			if err == nil {
				_ = ws.CloseNow()
				got = append(got, "opened")
				continue
			}
			if resp == nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			got = append(got, fmt.Sprint(resp.StatusCode))
		}
		_, _ = fmt.Fprint(w, strings.Join(got, " "))
	})
	// The undo block changes a workspace file behind the agent's back and
	// reads files back: GET and POST /file?path=REL (the body is the content).
	ctl.HandleFunc("/file", func(w http.ResponseWriter, r *http.Request) {
		rel := r.URL.Query().Get("path")
		if !strings.HasPrefix(rel, "src/") || strings.Contains(rel, "..") {
			http.Error(w, "a path under src/ only", http.StatusBadRequest)
			return
		}
		p := filepath.Join(ws, filepath.FromSlash(rel))
		if r.Method == http.MethodPost {
			b, err := io.ReadAll(r.Body)
			if err == nil {
				err = os.WriteFile(p, b, 0o644)
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
			}
			return
		}
		b, err := os.ReadFile(p)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		_, _ = w.Write(b)
	})
	control := serveControl(t, ctl)

	runScript(t, node, "ui.mjs", map[string]any{
		"base": base, "login": login, "control": control, "chromium": chromium,
		"screenshots": shotsDir(t, dir), "downloads": filepath.Join(dir, "downloads"), "flows": flows,
	})

	// What the browser did reached the workspace and the model.
	for _, f := range flows {
		got, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(f.File)))
		if err != nil || !strings.Contains(string(got), f.New) {
			t.Errorf("%s: %s after the allowed Edit: %q %v", f.Name, f.File, got, err)
		}
		art, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(f.Artifact)))
		if err != nil || string(art) != f.Content {
			t.Errorf("%s: the artifact %s: %q %v", f.Name, f.Artifact, art, err)
		}
	}
	var firsts []string
	for _, r := range srv.ModelRequests() {
		msgs := r.Messages()
		if len(msgs) == 0 {
			continue
		}
		if b, err := json.Marshal(msgs[len(msgs)-1]); err == nil && strings.Contains(string(b), "Files the user referenced") {
			firsts = append(firsts, string(b))
		}
	}
	for _, f := range flows {
		if !containsAny(firsts, f.File) {
			t.Errorf("%s: no prompt reached the model with the picked file %s listed: %q", f.Name, f.File, firsts)
		}
	}
	checkHistoryFlow(t, ws, srv)
	if n := srv.Pending(); n != 0 {
		t.Errorf("%d scripted replies were never asked for", n)
	}
}

func containsAny(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// historyScript queues the model's replies of the undo block of e2e/ui.mjs
// (a phone): turn A edits src/undo.txt (undone from its diff card), turn B
// edits src/rewind.txt, turn C edits src/undo.txt again (its undo is then
// refused: the file changed on disk), then the rewind to before turn B and
// the resent prompt B.
func historyScript(srv *fake.Server) {
	read := func(p string) fake.Reply {
		return fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": p}}}}
	}
	edit := func(p, old, new string) fake.Reply {
		return fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": p, "old_string": old, "new_string": new, "artifact": false}}}}
	}
	srv.Script(
		read("src/undo.txt"), edit("src/undo.txt", "beta", "gamma"), fake.Reply{Text: []string{"Edited A."}},
		read("src/rewind.txt"), edit("src/rewind.txt", "one", "two"), fake.Reply{Text: []string{"Edited B."}},
		read("src/undo.txt"), edit("src/undo.txt", "alpha", "ALPHA"), fake.Reply{Text: []string{"Edited C."}},
		fake.Reply{Text: []string{"Resent B."}},
	)
}

// checkHistoryFlow checks what the undo block left: the files rewound to
// before turn B, and the resent prompt's model request holds turn A but
// not the rewound turns B and C.
func checkHistoryFlow(t *testing.T, ws string, srv *fake.Server) {
	t.Helper()
	for rel, want := range map[string]string{"src/undo.txt": "alpha\nbeta\n", "src/rewind.txt": "one\n"} {
		if b, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(rel))); err != nil || string(b) != want {
			t.Errorf("undo block: %s is %q (%v), want %q", rel, b, err, want)
		}
	}
	var last string
	for _, r := range srv.ModelRequests() {
		if b, err := json.Marshal(r.Messages()); err == nil && strings.Contains(string(b), "UNDO-A") {
			last = string(b)
		}
	}
	if !strings.Contains(last, "REWIND-B") || strings.Contains(last, "REFUSE-C") || strings.Count(last, "REWIND-B") != 1 || !strings.Contains(last, "Edited A.") {
		t.Errorf("undo block: the request after the rewind holds %.3000s", last)
	}
}

// filesFixture is what the files block of e2e/ui.mjs works with: the
// bytes a script agent hands over, a PNG to paste, a text file to attach.
type filesFixture struct {
	ScriptAgent string `json:"script_agent"` // the script agent's id
	Artifact    string `json:"artifact"`     // the file it makes (workspace-relative)
	Expected    string `json:"expected"`     // a copy of its exact bytes, outside the workspace
	ACPAgent    string `json:"acp_agent"`    // the ACP agent without image support
	PNG         string `json:"png"`          // base64 of a PNG, pasted and read
	PNGWidth    int    `json:"png_width"`
	PNGHeight   int    `json:"png_height"`
	TextName    string `json:"text_name"` // a text file attached with the picker
	Text        string `json:"text"`
	PhoneLogin  string `json:"phone_login"` // a second login link, for the phone
}

// TestBrowserFiles drives the files both ways in headless Chromium against
// a real `ferry up` (docs/ui.md, "Attachments"): a script agent's file
// becomes a card whose download has the file's exact bytes; an image pasted
// and a text file attached reach ferry's agent's model as an image block
// and the file's text; an ACP agent without image support (acppeer, a real
// child process) refuses such a prompt before its turn starts and the UI
// says why; a Read of a PNG shows the image inline.
func TestBrowserFiles(t *testing.T) {
	node, chromium := browserDeps(t)
	dir := t.TempDir()
	ws := project(t, dir, map[string]string{"README.md": "# files\n"})
	// Every byte value, so a download that re-encodes anything shows.
	want := make([]byte, 0, 300)
	for i := range 256 {
		want = append(want, byte(i))
	}
	want = append(want, "é\r\n"...)
	expected := filepath.Join(dir, "expected.bin")
	if err := os.WriteFile(expected, want, 0o600); err != nil {
		t.Fatal(err)
	}
	// A script agent (docs/adapters.md) that makes a file: ferry sees it
	// in the workspace's before/after snapshot and hands it over.
	agent := filepath.Join(dir, "make-chart.sh")
	sh := fmt.Sprintf("#!/bin/sh\ncat >/dev/null\nmkdir -p out\ncat %q > out/chart.bin\necho 'Made out/chart.bin for you.'\n", expected)
	exectest.WriteScript(t, agent, sh)
	pic := testPNG(t, 160, 96)
	if err := os.WriteFile(filepath.Join(ws, "pic.png"), pic, 0o644); err != nil {
		t.Fatal(err)
	}
	// An ACP agent whose prompt capabilities lack images; its log shows
	// every line ferry sent it.
	acpBin := filepath.Join(dir, "acppeer")
	build := exec.Command("go", "build", "-o", acpBin, "github.com/ferry-dev/ferry/internal/adapter/acp/acppeer/cmd/acppeer")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the ACP peer: %v\n%s", err, out)
	}
	acpScript := filepath.Join(dir, "acppeer.json")
	acpLog := filepath.Join(dir, "acppeer.log")
	peer := `{"init":{"agentCapabilities":{"loadSession":false,"promptCapabilities":{"image":false,"embeddedContext":false}}},` +
		`"turns":[[{"text":"Text only, fine."},{"respond":{"stopReason":"end_turn"}}]]}`
	if err := os.WriteFile(acpScript, []byte(peer), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ACPPEER_SCRIPT", acpScript) // the ACP adapter passes its own environment on
	t.Setenv("ACPPEER_LOG", acpLog)

	srv := fake.New(t)
	srv.Script(
		fake.Reply{Text: []string{"Got the picture and the notes."}},
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "pic.png"}}}},
		fake.Reply{Text: []string{"A small picture."}},
	)
	env := upEnv(dir, srv.URL())
	db := filepath.Join(dir, "ferry.db")
	base, login := ferryUp(t, env, "--db", db, "--workspace", ws,
		"--agent", "builtin", "--agent", "script:"+agent, "--agent", "acp:"+acpBin)
	phone, err := newLogin(env, db)
	if err != nil {
		t.Fatal(err)
	}
	fx := filesFixture{ScriptAgent: "script:make-chart.sh", Artifact: "out/chart.bin", Expected: expected,
		ACPAgent: "acp:acppeer", PNG: base64.StdEncoding.EncodeToString(pic), PNGWidth: 160, PNGHeight: 96,
		TextName: "notes.txt", Text: "NOTES-7f3a: the totals are in column C.\n",
		PhoneLogin: base + "/login?token=" + strings.TrimSpace(phone)}
	runScript(t, node, "ui.mjs", map[string]any{
		"suite": "files", "base": base, "login": login, "chromium": chromium,
		"screenshots": shotsDir(t, dir), "downloads": filepath.Join(dir, "downloads"), "files": fx,
	})
	if got, err := os.ReadFile(filepath.Join(ws, "out", "chart.bin")); err != nil || !bytes.Equal(got, want) {
		t.Errorf("the script agent's file on disk: %q %v", got, err)
	}
	checkAttachments(t, srv, fx)
	// The refusal came before the turn: the ACP agent got only the prompt
	// resent without the image.
	if log, err := os.ReadFile(acpLog); err != nil || strings.Count(string(log), `"session/prompt"`) != 1 ||
		strings.Contains(string(log), `"image"`) || !strings.Contains(string(log), "NO-IMAGE") {
		t.Errorf("the ACP agent without image support: want one prompt, without the image (log: %v):\n%s", err, log)
	}
	if n := srv.Pending(); n != 0 {
		t.Errorf("%d scripted replies were never asked for", n)
	}
}

// checkAttachments checks what ferry's agent's model got for the prompt
// with the pasted image and the attached text file: an Anthropic image
// block holding the PNG's base64, and the text file's content.
func checkAttachments(t *testing.T, srv *fake.Server, fx filesFixture) {
	t.Helper()
	for _, r := range srv.ModelRequests() {
		msgs := r.Messages()
		if len(msgs) == 0 {
			continue
		}
		b, err := json.Marshal(msgs[0])
		if err != nil || !strings.Contains(string(b), "SEE-ATTACHED") {
			continue
		}
		var m struct {
			Content []struct {
				Type   string `json:"type"`
				Text   string `json:"text"`
				Source struct {
					Type      string `json:"type"`
					MediaType string `json:"media_type"`
					Data      string `json:"data"`
				} `json:"source"`
			} `json:"content"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("the first message: %v: %s", err, b)
		}
		image, text := false, false
		for _, c := range m.Content {
			image = image || (c.Type == "image" && c.Source.Type == "base64" && c.Source.MediaType == "image/png" && c.Source.Data == fx.PNG)
			text = text || (c.Type == "text" && strings.Contains(c.Text, fx.Text) && strings.Contains(c.Text, fx.TextName))
		}
		if !image || !text {
			t.Errorf("the model got no image block with the pasted PNG (%v) or no text of %s (%v): %.2000s", image, fx.TextName, text, b)
		}
		return
	}
	t.Errorf("no model request holds the prompt with the attachments")
}

// testPNG encodes a w×h PNG with a colour per pixel.
func testPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{R: uint8(255 * x / w), G: uint8(255 * y / h), B: 180, A: 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
