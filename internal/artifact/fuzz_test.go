package artifact

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzFileName: FileName never fails, returns separator-free names, and
// returns empty and separator-only inputs as given.
func FuzzFileName(f *testing.F) {
	for _, s := range []string{"", "/", "/reports/", `a\b\c.txt`, "x", `\\server\share\`, "a//b//", "../..", "é/ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got := FileName(p)
		if strings.Trim(p, `/\`) == "" {
			if got != p {
				t.Fatalf("FileName(%q) = %q, want the input", p, got)
			}
			return
		}
		if got == "" || strings.ContainsAny(got, `/\`) {
			t.Fatalf("FileName(%q) = %q", p, got)
		}
		if !strings.HasSuffix(strings.TrimRight(strings.ReplaceAll(p, `\`, "/"), "/"), got) {
			t.Fatalf("FileName(%q) = %q is not its last piece", p, got)
		}
	})
}

// FuzzTakeKey: removing the decorator's key from any input never panics,
// passes anything that is not one JSON object through untouched, and
// otherwise leaves an object that decodes to the input minus the key.
func FuzzTakeKey(f *testing.F) {
	for _, s := range []string{
		`{"file_path":"a","content":"x","artifact":true}`,
		`{"artifact":"true"}`,
		`{"artifact":1,"artifact":false}`,
		`{}`, `[]`, `null`, `{"a":1} {"b":2}`, `{"a":`, `{"artifact":{"nested":[1,2,{"artifact":true}]}}`,
		`{"\u0061rtifact":false,"x":"\u00e9"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		val, found, rest := takeKey(raw, FlagParam)
		if !found {
			if string(rest) != string(raw) {
				t.Fatalf("input changed without the key: %q → %q", raw, rest)
			}
			return
		}
		if !json.Valid(val) {
			t.Fatalf("value %q is not JSON", val)
		}
		var in, out map[string]any
		if err := json.Unmarshal(raw, &in); err != nil {
			// Go's decoder and objectFields agree on what an object is.
			t.Fatalf("found the key in %q, which does not decode: %v", raw, err)
		}
		if err := json.Unmarshal(rest, &out); err != nil {
			t.Fatalf("rest %q does not decode: %v", rest, err)
		}
		delete(in, FlagParam)
		if !reflect.DeepEqual(in, out) {
			t.Fatalf("rest %v, want %v", out, in)
		}
	})
}
