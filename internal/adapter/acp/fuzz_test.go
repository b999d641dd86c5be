package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/ferry-dev/ferry/internal/lines"
)

// FuzzLineDecoder checks the codec on arbitrary agent output, split into
// lines as the connection splits it (lines.Reader, fuzzed on its own in
// its package): every line the reader hands on is the stream's line, and
// every parsed message has a consistent shape that survives a re-encode.
// Seeds: testdata/fuzz/FuzzLineDecoder.
func FuzzLineDecoder(f *testing.F) {
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n"))
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s\"}}\r\n\n{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"fs/read_text_file\",\"params\":{}}"))
	f.Add([]byte("not json\n{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"x\"}}\n[1]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		const maxLine = 64
		lr := lines.NewReader(bytes.NewReader(data), maxLine)
		segs := bytes.Split(data, []byte("\n"))
		if len(segs[len(segs)-1]) == 0 {
			segs = segs[:len(segs)-1] // nothing after the last newline
		}
		for i := 0; ; i++ {
			line, skipped, err := lr.Next()
			if i == len(segs) {
				if !errors.Is(err, io.EOF) {
					t.Fatalf("after %d lines: %v", i, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("segment %d of %d: %v", i, len(segs), err)
			}
			seg := segs[i]
			if len(seg) > maxLine {
				if line != nil || skipped != int64(len(seg)) {
					t.Fatalf("segment %d (%d bytes): line %q, skipped %d", i, len(seg), line, skipped)
				}
				continue
			}
			if skipped != 0 || !bytes.Equal(line, bytes.TrimSuffix(seg, []byte("\r"))) {
				t.Fatalf("segment %d: line %q, skipped %d, want %q", i, line, skipped, seg)
			}
			checkMessage(t, line)
		}
	})
}

// checkMessage parses line and, if it is a message, checks its shape and
// that encoding it again gives the same message.
func checkMessage(t *testing.T, line []byte) {
	m, err := parseMessage(line)
	if err != nil {
		if !errors.Is(err, errMalformed) {
			t.Fatalf("parse error %v does not wrap errMalformed", err)
		}
		return
	}
	shapes := 0
	for _, ok := range []bool{m.isRequest(), m.isNotification(), m.isResponse()} {
		if ok {
			shapes++
		}
	}
	if shapes != 1 || m.isResponse() && (m.ID == nil || (m.Result == nil) == (m.Error == nil)) {
		t.Fatalf("message %+v has %d shapes", m, shapes)
	}
	w := wireOut{ID: m.ID, Method: m.Method, Error: m.Error}
	if m.Params != nil {
		w.Params = m.Params
	}
	if m.Result != nil {
		w.Result = m.Result
	}
	b, err := encodeLine(w)
	if err != nil {
		t.Fatalf("re-encode %+v: %v", m, err)
	}
	m2, err := parseMessage(b)
	if err != nil {
		t.Fatalf("re-parse %s: %v", b, err)
	}
	if m2.Method != m.Method || idKey(m2.ID) != idKey(m.ID) && (!isNull(m.ID) || m2.ID != nil) || (m2.Error == nil) != (m.Error == nil) {
		t.Fatalf("round trip %+v → %s → %+v", m, b, m2)
	}
	if !json.Valid(b) || bytes.Count(b, []byte("\n")) != 1 {
		t.Fatalf("encoded line %q", b)
	}
}
