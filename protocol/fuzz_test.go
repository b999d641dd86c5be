package protocol_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
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
		sameAsBytes(t, data, m, err)
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

// sameAsBytes fails unless decoding data's bytes with encoding/json
// (protocol.DecodeBytes) gives what Decode gave: m, or err's code and field.
func sameAsBytes(t *testing.T, data []byte, m *protocol.Message, err error) {
	t.Helper()
	want, wantErr := protocol.DecodeBytes(data)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("Decode: %v; decoding the bytes: %v\n%s", err, wantErr, data)
	}
	if err != nil {
		var got, exp *protocol.Error
		if errors.As(err, &got) && errors.As(wantErr, &exp) && (got.Code != exp.Code || got.Field != exp.Field) {
			t.Fatalf("Decode: %v; decoding the bytes: %v\n%s", err, wantErr, data)
		}
		return
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("Decode gave %#v\ndecoding the bytes %#v\n%s", m.Payload, want.Payload, data)
	}
}

// TestFillMatchesBytes: for every golden message (every type) and the
// fuzz corpus, the payload filled from the generic value is the one
// encoding/json decodes from the bytes.
func TestFillMatchesBytes(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "golden", "*.json"))
	corpus, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzDecode", "*"))
	if len(files) == 0 {
		t.Fatal("no golden messages")
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		m, err := protocol.Decode(data)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		sameAsBytes(t, data, m, err)
	}
	for _, file := range corpus {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		// go test fuzz v1 files: the input is the []byte("…") line.
		for _, line := range strings.Split(string(b), "\n") {
			if q, ok := strings.CutPrefix(line, "[]byte("); ok {
				s, err := strconv.Unquote(strings.TrimSuffix(q, ")"))
				if err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				m, err := protocol.Decode([]byte(s))
				sameAsBytes(t, []byte(s), m, err)
			}
		}
	}
}
