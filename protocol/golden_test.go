package protocol_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ferry-dev/ferry/protocol"
)

func readGolden(t *testing.T, msgType string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "golden", msgType+".json"))
	if err != nil {
		t.Fatalf("every message type needs a golden file: %v", err)
	}
	return b
}

// TestGoldenRoundTrip decodes one message of every type, encodes it and
// decodes it again: the second encoding must equal the first, and the
// re-decoded message must equal the first decode.
func TestGoldenRoundTrip(t *testing.T) {
	for _, info := range protocol.Messages() {
		t.Run(info.Type, func(t *testing.T) {
			raw := readGolden(t, info.Type)
			m1, err := protocol.Decode(raw)
			if err != nil {
				t.Fatalf("golden file does not decode: %v", err)
			}
			if m1.Type != info.Type {
				t.Fatalf("type %q, want %q", m1.Type, info.Type)
			}
			enc1, err := protocol.Encode(m1)
			if err != nil {
				t.Fatal(err)
			}
			m2, err := protocol.Decode(enc1)
			if err != nil {
				t.Fatalf("re-encoded message does not decode: %v\n%s", err, enc1)
			}
			if !reflect.DeepEqual(m1, m2) {
				t.Fatalf("decode → encode → decode changed the message:\n%#v\n%#v", m1.Payload, m2.Payload)
			}
			enc2, err := protocol.Encode(m2)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(enc1, enc2) {
				t.Fatalf("encoding is not stable:\n%s\n%s", enc1, enc2)
			}
			// Nothing the golden file says may be lost: every key of the
			// original survives the trip (defaults may add keys).
			var orig, back map[string]any
			_ = json.Unmarshal(raw, &orig)
			_ = json.Unmarshal(enc1, &back)
			assertSubset(t, "", orig, back)
		})
	}
}

func assertSubset(t *testing.T, path string, want, got any) {
	t.Helper()
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			t.Fatalf("%s: want object, got %T", path, got)
		}
		for k, v := range w {
			assertSubset(t, path+"."+k, v, g[k])
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			t.Fatalf("%s: want %d-item array, got %v", path, len(w), got)
		}
		for i := range w {
			assertSubset(t, path, w[i], g[i])
		}
	default:
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("%s: want %v, got %v", path, want, got)
		}
	}
}

func TestGoldenFilesMatchRegistry(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "golden", "*.json"))
	known := map[string]bool{}
	for _, info := range protocol.Messages() {
		known[info.Type+".json"] = true
	}
	for _, f := range files {
		if !known[filepath.Base(f)] {
			t.Errorf("golden file %s names no registered message type", f)
		}
	}
	if len(files) != len(known) {
		t.Errorf("%d golden files for %d message types", len(files), len(known))
	}
}
