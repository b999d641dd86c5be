package protocol_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferry-dev/ferry/protocol"
)

// FuzzDecode: Decode never panics, only ever fails with a coded *Error, and
// whatever it accepts survives encode → decode unchanged.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "golden", "*.json"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"type":"control.file.search","payload":{"max_results":1e400}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := protocol.Decode(data)
		if err != nil {
			var pe *protocol.Error
			if !errors.As(err, &pe) {
				t.Fatalf("error of type %T", err)
			}
			if _, ok := protocol.ErrorCodes[pe.Code]; !ok {
				t.Fatalf("undocumented code %q", pe.Code)
			}
			return
		}
		enc, err := protocol.Encode(m)
		if err != nil {
			t.Fatalf("accepted message does not encode: %v", err)
		}
		m2, err := protocol.Decode(enc)
		if err != nil {
			t.Fatalf("re-encoded message rejected: %v\n%s", err, enc)
		}
		enc2, err := protocol.Encode(m2)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("unstable encoding:\n%s\n%s", enc, enc2)
		}
	})
}

func BenchmarkDecodePrompt(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join("testdata", "golden", "control.prompt.request.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := protocol.Decode(raw); err != nil {
			b.Fatal(err)
		}
	}
}
