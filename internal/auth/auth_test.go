package auth

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/sqlite"
)

// newStore opens a real SQLite file in the test's temporary directory.
func newStore(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ferry.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// setClock makes now return *at for the test.
func setClock(t *testing.T, at *time.Time) {
	old := now
	now = func() time.Time { return *at }
	t.Cleanup(func() { now = old })
}

var secretRE = regexp.MustCompile(`^ferry_(client|ui|login)_[A-Za-z0-9_-]{43}$`)

func TestIssueVerify(t *testing.T) {
	st := newStore(t)
	for _, kind := range []string{store.TokenClient, store.TokenUI, store.TokenLogin} {
		secret, tok, err := Issue(ctx(t), st, kind, "laptop", 0)
		if err != nil {
			t.Fatal(err)
		}
		if !secretRE.MatchString(secret) || !strings.HasPrefix(secret, "ferry_"+kind+"_") {
			t.Fatalf("secret %q has the wrong shape", secret)
		}
		if strings.Contains(string(tok.Hash), secret) || len(tok.Hash) != 32 {
			t.Fatalf("stored hash %x is not a SHA-256", tok.Hash)
		}
		got, err := Verify(ctx(t), st, secret, kind)
		if err != nil {
			t.Fatalf("Verify(%s): %v", kind, err)
		}
		if got.ID != tok.ID || got.Kind != kind || got.Name != "laptop" {
			t.Fatalf("Verify returned %+v, want %+v", got, tok)
		}
		if _, err := Verify(ctx(t), st, secret); err != nil {
			t.Fatalf("Verify with any kind: %v", err)
		}
	}
	a, _, _ := Issue(ctx(t), st, store.TokenClient, "a", 0)
	b, _, _ := Issue(ctx(t), st, store.TokenClient, "b", 0)
	if a == b {
		t.Fatal("two secrets are equal")
	}
	if _, _, err := Issue(ctx(t), st, "admin", "x", 0); err == nil {
		t.Fatal("Issue accepted an unknown kind")
	}
}

func TestVerifyRejects(t *testing.T) {
	st := newStore(t)
	client, clientTok, err := Issue(ctx(t), st, store.TokenClient, "c", 0)
	if err != nil {
		t.Fatal(err)
	}
	revoked, revokedTok, _ := Issue(ctx(t), st, store.TokenUI, "r", 0)
	if err := st.RevokeToken(ctx(t), revokedTok.ID); err != nil {
		t.Fatal(err)
	}
	// A well-formed secret nobody issued.
	unknown := "ferry_ui_" + strings.Repeat("A", 43)
	// The client secret relabelled as a UI secret: its hash is unknown.
	relabelled := strings.Replace(client, "ferry_client_", "ferry_ui_", 1)
	cases := map[string]struct {
		secret string
		kinds  []string
	}{
		"empty":           {"", nil},
		"no prefix":       {strings.TrimPrefix(client, "ferry_"), nil},
		"unknown kind":    {strings.Replace(client, "_client_", "_admin_", 1), nil},
		"short":           {client[:len(client)-1], nil},
		"long":            {client + "A", nil},
		"not base64url":   {client[:len(client)-1] + "+", nil},
		"unknown":         {unknown, nil},
		"relabelled":      {relabelled, nil},
		"wrong kind":      {client, []string{store.TokenUI}},
		"login for ui":    {client, []string{store.TokenUI, store.TokenLogin}},
		"revoked":         {revoked, nil},
		"bearer included": {"Bearer " + client, nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Verify(ctx(t), st, c.secret, c.kinds...); !errors.Is(err, ErrUnauthorized) {
				t.Fatalf("Verify = %v, want ErrUnauthorized", err)
			}
		})
	}
	if tok, err := Verify(ctx(t), st, client, store.TokenUI, store.TokenClient); err != nil || tok.ID != clientTok.ID {
		t.Fatalf("Verify with the right kind among several: %v", err)
	}
}

func TestExpiry(t *testing.T) {
	st := newStore(t)
	clock := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	setClock(t, &clock)
	secret, _, err := Issue(ctx(t), st, store.TokenUI, "u", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(time.Hour - time.Second)
	if _, err := Verify(ctx(t), st, secret, store.TokenUI); err != nil {
		t.Fatalf("a second before expiry: %v", err)
	}
	clock = clock.Add(time.Second)
	if _, err := Verify(ctx(t), st, secret, store.TokenUI); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("at expiry: %v, want ErrUnauthorized", err)
	}
}

func TestExchangeLogin(t *testing.T) {
	st := newStore(t)
	login, _, err := Issue(ctx(t), st, store.TokenLogin, "login URL", LoginTTL)
	if err != nil {
		t.Fatal(err)
	}
	ui, err := ExchangeLogin(ctx(t), st, login)
	if err != nil {
		t.Fatalf("first exchange: %v", err)
	}
	tok, err := Verify(ctx(t), st, ui, store.TokenUI)
	if err != nil {
		t.Fatalf("the UI token does not verify: %v", err)
	}
	if tok.ExpiresAt.IsZero() {
		t.Fatal("the UI token never expires")
	}
	if _, err := ExchangeLogin(ctx(t), st, login); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("second exchange: %v, want ErrUnauthorized", err)
	}
	if _, err := Verify(ctx(t), st, login); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("the consumed login token still verifies: %v", err)
	}
	// A UI or client token is not a login token.
	if _, err := ExchangeLogin(ctx(t), st, ui); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("exchanging a UI token: %v, want ErrUnauthorized", err)
	}
	if _, err := ExchangeLogin(ctx(t), st, "ferry_login_short"); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("exchanging garbage: %v, want ErrUnauthorized", err)
	}
}

func TestExchangeLoginExpired(t *testing.T) {
	st := newStore(t)
	clock := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	setClock(t, &clock)
	login, _, err := Issue(ctx(t), st, store.TokenLogin, "l", LoginTTL)
	if err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(LoginTTL)
	if _, err := ExchangeLogin(ctx(t), st, login); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("expired exchange: %v, want ErrUnauthorized", err)
	}
	if toks, _ := st.ListTokens(ctx(t)); len(toks) != 0 {
		t.Fatalf("tokens left after exchanging an expired login: %+v", toks)
	}
}

func TestExchangeLoginConcurrent(t *testing.T) {
	st := newStore(t)
	login, _, err := Issue(ctx(t), st, store.TokenLogin, "l", LoginTTL)
	if err != nil {
		t.Fatal(err)
	}
	const n = 16
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		wins int
	)
	for range n {
		wg.Go(func() {
			_, err := ExchangeLogin(ctx(t), st, login)
			switch {
			case err == nil:
				mu.Lock()
				wins++
				mu.Unlock()
			case !errors.Is(err, ErrUnauthorized):
				t.Errorf("exchange: %v", err)
			}
		})
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d exchanges of one login token succeeded, want 1", wins)
	}
}

func TestMachineScope(t *testing.T) {
	st := newStore(t)
	ui, tok, err := Issue(ctx(t), st, store.TokenUI, "phone", 0, WithMachines("m2", "m1", "m2"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"m2", "m1"}; !slices.Equal(tok.Machines, want) {
		t.Fatalf("issued scope %q, want %q (a repeated ID once)", tok.Machines, want)
	}
	if _, _, err := Issue(ctx(t), st, store.TokenUI, "nothing?", 0, WithMachines("")); err == nil {
		t.Fatal("Issue accepted an empty machine ID (which would have meant every machine)")
	}
	if got, err := Verify(ctx(t), st, ui, store.TokenUI); err != nil || !slices.Equal(got.Machines, tok.Machines) {
		t.Fatalf("Verify: scope %q, %v; want %q", got.Machines, err, tok.Machines)
	}
	if _, tok, err := Issue(ctx(t), st, store.TokenUI, "all", 0, WithMachines()); err != nil || len(tok.Machines) != 0 {
		t.Fatalf("WithMachines() = scope %q, %v; want every machine", tok.Machines, err)
	}
	if _, _, err := Issue(ctx(t), st, store.TokenClient, "laptop", 0, WithMachines("m1")); err == nil {
		t.Fatal("Issue gave a client token a machine scope")
	}

	// The login exchange hands the scope on; an unscoped login stays unscoped.
	for _, scope := range [][]string{{"m1"}, nil} {
		login, _, err := Issue(ctx(t), st, store.TokenLogin, "login URL", LoginTTL, WithMachines(scope...))
		if err != nil {
			t.Fatal(err)
		}
		ui, err := ExchangeLogin(ctx(t), st, login)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Verify(ctx(t), st, ui, store.TokenUI)
		if err != nil || !slices.Equal(got.Machines, scope) {
			t.Fatalf("UI token from a login scoped to %q: scope %q, %v", scope, got.Machines, err)
		}
	}
}

// TestExchangeLoginDevice: the UI token an exchange issues carries the
// device it was given, and its machine scope stays the login token's
// whatever options the caller passes.
func TestExchangeLoginDevice(t *testing.T) {
	st := newStore(t)
	login, _, err := Issue(ctx(t), st, store.TokenLogin, "login URL", LoginTTL, WithMachines("m1"))
	if err != nil {
		t.Fatal(err)
	}
	ui, err := ExchangeLogin(ctx(t), st, login, WithDevice("Firefox on Linux"), WithMachines())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := Verify(ctx(t), st, ui, store.TokenUI)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Device != "Firefox on Linux" || len(tok.Machines) != 1 || tok.Machines[0] != "m1" {
		t.Fatalf("UI token device %q, machines %v; want Firefox on Linux, [m1]", tok.Device, tok.Machines)
	}
}
