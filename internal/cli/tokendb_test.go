package cli_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/cli"
	"github.com/ferry-dev/ferry/internal/master/mastertest"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/backend"
)

// TestTokenCommandsCreateNoStrayDatabase: token list and revoke read the
// master's database and never create one (they say which path they looked
// at and how to name another); create refuses a --db whose folder does
// not exist, and says so when it starts a new database in the default
// place.
func TestTokenCommandsCreateNoStrayDatabase(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := map[string]string{"HOME": home}
	defaultDB := filepath.Join(home, ".local", "share", "ferry", "ferry.db")
	missing := filepath.Join(t.TempDir(), "nonexistent", "x.db")
	for _, args := range [][]string{
		{"token", "list"},
		{"token", "revoke", "abc"},
		{"token", "list", "--db", missing},
		{"token", "revoke", "--db", missing, "abc"},
		{"token", "create", "--db", missing},
	} {
		code, stdout, stderr := runEnv(t, env, args...)
		want := defaultDB
		if len(args) > 2 && slicesContains(args, "--db") {
			want = missing
		}
		if code == cli.ExitOK || stdout != "" || !strings.Contains(stderr, want) || !strings.Contains(stderr, "--db") {
			t.Errorf("ferry %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, stdout, stderr)
		}
	}
	for _, p := range []string{filepath.Join(home, ".local"), filepath.Dir(missing)} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s was created (%v)", p, err)
		}
	}
	// create in the default place starts the database, and says so.
	code, stdout, stderr := runEnv(t, env, "token", "create", "--name", "laptop")
	if code != cli.ExitOK || !strings.HasPrefix(stdout, "ferry_client_") || !strings.Contains(stderr, "new database "+defaultDB) {
		t.Fatalf("token create: exit %d, %q %q", code, stdout, stderr)
	}
	if code, stdout, stderr := runEnv(t, env, "token", "list"); code != cli.ExitOK || !strings.Contains(stdout, "laptop") {
		t.Fatalf("token list: exit %d, %q %q", code, stdout, stderr)
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestLoginTokenCheckedAgainstMaster: a login token made with --master is
// checked against that master: made in a database it does not use, it is
// refused (and not left behind); made in its database, the output names
// the master and the database.
func TestLoginTokenCheckedAgainstMaster(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "master.db")
	u := startUp(t, nil, "--db", db, "--agent", "echo", "--workspace", t.TempDir())
	env := map[string]string{"HOME": t.TempDir()}
	other := filepath.Join(t.TempDir(), "other.db")
	if code, _, stderr := runEnv(t, env, "token", "create", "--db", other); code != cli.ExitOK {
		t.Fatalf("create in another database: %d %s", code, stderr)
	}
	code, stdout, stderr := runEnv(t, env, "token", "create", "--kind", "login", "--master", u.base, "--db", other)
	if code == cli.ExitOK || strings.Contains(stdout, "/login?token=") || !strings.Contains(stderr, "does not use the database "+other) {
		t.Fatalf("login token for another master's database: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if _, list, _ := runEnv(t, env, "token", "list", "--db", other); strings.Contains(list, "login") {
		t.Fatalf("the refused login token was left behind:\n%s", list)
	}
	code, stdout, stderr = runEnv(t, env, "token", "create", "--kind", "login", "--master", u.base, "--db", db)
	if code != cli.ExitOK || !strings.Contains(stdout, u.base+"/login?token=") || !strings.Contains(stderr, "for the master at "+u.base) ||
		!strings.Contains(stderr, "checked: it uses the database "+db) {
		t.Fatalf("login token for its master: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestTokenListShowsStateAndDevice: token list marks each token active or
// expired, and names the device of a UI token: the name it got at sign-in,
// then the labels its browser gave when it turned notifications on (each
// once).
func TestTokenListShowsStateAndDevice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "ferry.db")
	st, err := backend.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, tok := range []store.Token{
		{ID: "tok-live", Kind: store.TokenUI, Name: "login URL", Hash: bytes.Repeat([]byte("1"), 32), CreatedAt: now, Device: "Chrome on Android"},
		{ID: "tok-signed", Kind: store.TokenUI, Name: "login URL", Hash: bytes.Repeat([]byte("4"), 32), CreatedAt: now, Device: "Firefox on Linux"},
		{ID: "tok-same", Kind: store.TokenUI, Name: "login URL", Hash: bytes.Repeat([]byte("5"), 32), CreatedAt: now, Device: "Safari on iPhone"},
		{ID: "tok-old", Kind: store.TokenUI, Name: "old phone", Hash: bytes.Repeat([]byte("2"), 32), CreatedAt: now.Add(-2 * time.Hour), ExpiresAt: now.Add(-time.Hour)},
		{ID: "tok-client", Kind: store.TokenClient, Name: "laptop", Hash: bytes.Repeat([]byte("3"), 32), CreatedAt: now},
	} {
		if err := st.CreateToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	p256 := append([]byte{4}, bytes.Repeat([]byte{1}, 64)...)
	if err := st.PutPushSubscription(ctx, store.PushSubscription{Endpoint: "https://push.example/1", P256dh: p256, Auth: bytes.Repeat([]byte{2}, 16),
		OwnerID: "tok-live", Label: "Pixel 8 (Chrome)", CreatedAt: now}, 10); err != nil {
		t.Fatal(err)
	}
	if err := st.PutPushSubscription(ctx, store.PushSubscription{Endpoint: "https://push.example/2", P256dh: p256, Auth: bytes.Repeat([]byte{2}, 16),
		OwnerID: "tok-same", Label: "Safari on iPhone", CreatedAt: now}, 10); err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	code, out, errOut := runEnv(t, nil, "token", "list", "--db", db)
	if code != cli.ExitOK {
		t.Fatalf("list: %d %s", code, errOut)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		id, _, _ := strings.Cut(l, "\t")
		lines[id] = l
	}
	for id, want := range map[string][]string{
		"tok-live":   {"\tactive\t", "\tdevice: Chrome on Android, Pixel 8 (Chrome)\t"},
		"tok-signed": {"\tactive\t", "\tdevice: Firefox on Linux\t"},
		"tok-same":   {"\tactive\t", "\tdevice: Safari on iPhone\t"},
		"tok-old":    {"\texpired\t", "\tdevice: -\t"},
		"tok-client": {"\tactive\t"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[id], w) {
				t.Errorf("token %s: line %q lacks %q", id, lines[id], w)
			}
		}
	}
}

// TestTokenListShowsSignInDevice: a UI token made by signing in names its
// device (from the browser's User-Agent, in ferry's own words) though the
// browser never turned notifications on.
func TestTokenListShowsSignInDevice(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "ferry.db")
	u := startUp(t, nil, "--db", db)
	if _, err := mastertest.LoginWith(context.Background(), u.loginURL, http.Header{"User-Agent": {
		"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36"}}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runEnv(t, nil, "token", "list", "--db", db)
	if code != cli.ExitOK {
		t.Fatalf("list: %d %s", code, errOut)
	}
	var ui []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.Contains(l, "\tui\t") {
			ui = append(ui, l)
		}
	}
	if len(ui) != 1 || !strings.Contains(ui[0], "\tdevice: Chrome on Android\t") {
		t.Fatalf("UI tokens after a sign-in from Chrome on Android:\n%s", out)
	}
}
