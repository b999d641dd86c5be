package filehistory

import (
	"errors"
	"path/filepath"
	"testing"
)

func TestSessionDir(t *testing.T) {
	t.Parallel()
	d, err := SessionDir("/state", "0b6c1d2e-aa_Z")
	if err != nil || d != filepath.Join("/state", "history", "0b6c1d2e-aa_Z") {
		t.Fatalf("%q %v", d, err)
	}
	for _, bad := range []string{"", "..", "../x", "a/b", `a\b`, "a b", ".hidden", string(make([]byte, 65))} {
		if _, err := SessionDir("/state", bad); !errors.Is(err, ErrBadSession) {
			t.Errorf("%q: %v", bad, err)
		}
		// Any id still has a journal folder, inside history/ and its own.
		if d := JournalDir("/state", bad); filepath.Dir(d) != filepath.Join("/state", "history") || d == JournalDir("/state", bad+"x") {
			t.Errorf("JournalDir(%q) = %q", bad, d)
		}
	}
	if d := JournalDir("/state", "0b6c1d2e-aa_Z"); d != filepath.Join("/state", "history", "0b6c1d2e-aa_Z") {
		t.Errorf("JournalDir of a plain id: %q", d)
	}
}

func TestDefaultStateDir(t *testing.T) {
	env := map[string]string{"XDG_STATE_HOME": "/xdg", "HOME": "/home/u"}
	get := func(k string) string { return env[k] }
	if d, err := DefaultStateDir(get); err != nil || d != filepath.Join("/xdg", "ferry") {
		t.Fatalf("%q %v", d, err)
	}
	env["XDG_STATE_HOME"] = "relative" // not absolute: ignored, as the XDG spec says
	if d, err := DefaultStateDir(get); err != nil || d != filepath.Join("/home/u", ".local", "state", "ferry") {
		t.Fatalf("%q %v", d, err)
	}
	t.Setenv("XDG_STATE_HOME", "/xdg2")
	if d, err := DefaultDir(); err != nil || d != filepath.Join("/xdg2", "ferry", "history") {
		t.Fatalf("DefaultDir %q %v", d, err)
	}
}
