package protocol_test

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/protocol"
)

func TestArtifactChunkRoundTrip(t *testing.T) {
	id := protocol.NewID()
	for _, c := range []protocol.ArtifactChunk{
		{RequestID: id, Offset: 0, Data: []byte("x")},
		{RequestID: id, Offset: 1 << 40, Data: bytes.Repeat([]byte{0xff}, protocol.ArtifactChunkSize)},
		{RequestID: strings.ToUpper(id), Offset: math.MaxInt64 - 1, Data: []byte{0}},
	} {
		frame, err := protocol.AppendArtifactChunk([]byte("prefix"), c)
		if err != nil {
			t.Fatalf("encode %+v: %v", c.Offset, err)
		}
		if !bytes.HasPrefix(frame, []byte("prefix")) || len(frame) != len("prefix")+protocol.ArtifactChunkHeader+len(c.Data) {
			t.Fatalf("frame of %d bytes for %d data bytes", len(frame), len(c.Data))
		}
		got, err := protocol.DecodeArtifactChunk(frame[len("prefix"):])
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if got.RequestID != strings.ToLower(c.RequestID) || got.Offset != c.Offset || !bytes.Equal(got.Data, c.Data) {
			t.Fatalf("round trip: got %s %d %d bytes", got.RequestID, got.Offset, len(got.Data))
		}
		if r := protocol.ArtifactChunkRequest(frame[len("prefix"):]); r != got.RequestID {
			t.Fatalf("ArtifactChunkRequest = %q, want %q", r, got.RequestID)
		}
		// A frame built in place is the same frame.
		inPlace, data, err := protocol.NewArtifactChunkFrame(c.RequestID, c.Offset, len(c.Data))
		if err != nil {
			t.Fatal(err)
		}
		copy(data, c.Data)
		if !bytes.Equal(inPlace, frame[len("prefix"):]) {
			t.Fatal("NewArtifactChunkFrame and AppendArtifactChunk disagree")
		}
	}
}

func TestArtifactChunkRefused(t *testing.T) {
	id := protocol.NewID()
	for name, c := range map[string]protocol.ArtifactChunk{
		"not a uuid":      {RequestID: "r1", Data: []byte("x")},
		"no data":         {RequestID: id},
		"too much data":   {RequestID: id, Data: make([]byte, protocol.ArtifactChunkSize+1)},
		"negative offset": {RequestID: id, Offset: -1, Data: []byte("x")},
		"overflow":        {RequestID: id, Offset: math.MaxInt64, Data: []byte("x")},
	} {
		if _, err := protocol.AppendArtifactChunk(nil, c); !errors.Is(err, protocol.ErrInvalidValue) {
			t.Errorf("%s: encode error %v, want invalid_value", name, err)
		}
		if _, _, err := protocol.NewArtifactChunkFrame(c.RequestID, c.Offset, len(c.Data)); !errors.Is(err, protocol.ErrInvalidValue) {
			t.Errorf("%s: NewArtifactChunkFrame error %v, want invalid_value", name, err)
		}
	}
	good, _ := protocol.AppendArtifactChunk(nil, protocol.ArtifactChunk{RequestID: id, Data: []byte("x")})
	for name, frame := range map[string][]byte{
		"empty":       nil,
		"header only": good[:protocol.ArtifactChunkHeader],
		"wrong kind":  append([]byte{0x02}, good[1:]...),
		"json":        []byte(`{"type":"session.artifact.end","message_id":"x","payload":{}}`),
		"too long":    append(bytes.Clone(good), make([]byte, protocol.ArtifactChunkSize)...),
		"offset past int64": func() []byte {
			f := bytes.Clone(good)
			f[17] = 0x80
			return f
		}(),
	} {
		if _, err := protocol.DecodeArtifactChunk(frame); !errors.Is(err, protocol.ErrInvalidValue) {
			t.Errorf("%s: decode error %v, want invalid_value", name, err)
		}
	}
	if r := protocol.ArtifactChunkRequest([]byte("{}")); r != "" {
		t.Errorf("ArtifactChunkRequest of JSON = %q", r)
	}
}

// FuzzArtifactChunk: decoding any bytes never panics, fails only with
// invalid_value, and what it accepts encodes back to the same frame
// (modulo the UUID's case, which the decoder lowers).
func FuzzArtifactChunk(f *testing.F) {
	good, _ := protocol.AppendArtifactChunk(nil, protocol.ArtifactChunk{RequestID: "e8d1c6b4-9a2f-4e7d-8c3b-5a6f7e8d9c0b", Offset: 4096, Data: []byte("hello")})
	f.Add(good)
	f.Fuzz(func(t *testing.T, frame []byte) {
		c, err := protocol.DecodeArtifactChunk(frame)
		if err != nil {
			if !errors.Is(err, protocol.ErrInvalidValue) {
				t.Fatalf("error %v is not invalid_value", err)
			}
			return
		}
		if len(c.Data) == 0 || len(c.Data) > protocol.ArtifactChunkSize || c.Offset < 0 {
			t.Fatalf("accepted a chunk of %d bytes at %d", len(c.Data), c.Offset)
		}
		again, err := protocol.AppendArtifactChunk(nil, c)
		if err != nil {
			t.Fatalf("an accepted chunk does not encode: %v", err)
		}
		if !bytes.Equal(again, frame) {
			t.Fatalf("re-encoding changed the frame:\n%x\n%x", frame, again)
		}
	})
}

func TestArtifactRangeOverflow(t *testing.T) {
	b := mutate(t, "control.artifact.range", func(_, p map[string]any) {
		p["offset"] = int64(math.MaxInt64 - 10)
		p["length"] = 11
	})
	if _, err := protocol.Decode(b); !errors.Is(err, &protocol.Error{Code: protocol.CodeInvalidValue, Field: "payload.length"}) {
		t.Fatalf("offset+length past int64: %v", err)
	}
}

// TestDownloadDirections: only the master sends the control.artifact.*
// messages (a UI cannot make a client read a file), only a client answers.
func TestDownloadDirections(t *testing.T) {
	for _, typ := range []string{protocol.TypeArtifactRead, protocol.TypeArtifactRange, protocol.TypeArtifactAck, protocol.TypeArtifactCancel} {
		if _, err := protocol.DecodeFrom(protocol.RoleUI, readGolden(t, typ)); !errors.Is(err, protocol.ErrWrongDirection) {
			t.Errorf("a UI sending %s: %v, want wrong_direction", typ, err)
		}
		if _, err := protocol.DecodeFrom(protocol.RoleMaster, readGolden(t, typ)); err != nil {
			t.Errorf("the master sending %s: %v", typ, err)
		}
	}
	for _, typ := range []string{protocol.TypeArtifactMeta, protocol.TypeArtifactEnd} {
		if _, err := protocol.DecodeFrom(protocol.RoleUI, readGolden(t, typ)); !errors.Is(err, protocol.ErrWrongDirection) {
			t.Errorf("a UI sending %s: %v, want wrong_direction", typ, err)
		}
	}
	if _, err := protocol.DecodeFrom(protocol.RoleUI, readGolden(t, protocol.TypeArtifactsList)); err != nil {
		t.Errorf("a UI listing artifacts: %v", err)
	}
}
