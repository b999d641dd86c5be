package protocol

import (
	"strings"
	"testing"
)

// FuzzUploadURL: checkFileURL accepts a ferry-upload URL exactly when
// ParseUploadURL does, and what it accepts is rebuilt unchanged from its
// parts (so nothing else can ride along in the URL).
func FuzzUploadURL(f *testing.F) {
	for _, s := range []string{
		"ferry-upload:upl_abc", "ferry-upload:upl_abc?grant=x.y_z-1", "ferry-upload:upl_",
		"ferry-upload:upl_a?grant=x&grant=y", "ferry-upload:upl_a#x", "Ferry-Upload:upl_Q",
		"ferry-upload:upl_%41", "ferry-upload:upl_a?grant=ü",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		id, grant, ok := ParseUploadURL(raw)
		scheme, _, _ := strings.Cut(raw, ":")
		if strings.EqualFold(scheme, UploadScheme) && (checkFileURL(raw) == "") != ok {
			t.Fatalf("%q: checkFileURL and ParseUploadURL disagree (parse ok %v)", raw, ok)
		}
		if !ok {
			return
		}
		if !strings.HasPrefix(id, UploadIDPrefix) || len(id) > maxUploadIDLen || len(grant) > maxGrantLen {
			t.Fatalf("%q: accepted id %q grant %q", raw, id, grant)
		}
		if got := UploadURL(id, grant); !strings.EqualFold(got[:len(UploadScheme)], raw[:len(UploadScheme)]) || got[len(UploadScheme):] != raw[len(UploadScheme):] {
			t.Fatalf("%q: rebuilt as %q", raw, got)
		}
	})
}
