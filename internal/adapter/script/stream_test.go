package script

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// chunkReader returns data in reads of the given sizes (cycled).
type chunkReader struct {
	data  []byte
	sizes []int
	i     int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := 1
	if len(r.sizes) > 0 {
		n = max(1, r.sizes[r.i%len(r.sizes)])
		r.i++
	}
	n = min(n, len(p), len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// stream runs streamUTF8 over data read in the given sizes.
func stream(data []byte, sizes []int) []string {
	var out []string
	streamUTF8(&chunkReader{data: data, sizes: sizes}, func(s string) bool {
		out = append(out, s)
		return true
	})
	return out
}

func TestStreamUTF8SplitSequence(t *testing.T) {
	t.Parallel()
	// "a€b" with the euro sign's three bytes split 1+2 and 2+1 across reads.
	for _, sizes := range [][]int{{2, 2, 1}, {3, 2}, {1}} {
		got := stream([]byte("a€b"), sizes)
		if strings.Join(got, "") != "a€b" {
			t.Fatalf("sizes %v: %q", sizes, got)
		}
		for _, d := range got {
			if !utf8.ValidString(d) || strings.ContainsRune(d, utf8.RuneError) {
				t.Fatalf("sizes %v: piece %q", sizes, d)
			}
		}
	}
	// Invalid bytes become U+FFFD; a truncated sequence at the end too.
	if got := strings.Join(stream([]byte("x\xffy\xe2\x82"), []int{1}), ""); got != "x\uFFFDy\uFFFD" {
		t.Fatalf("invalid input: %q", got)
	}
	// A refused piece stops the stream.
	calls := 0
	if streamUTF8(strings.NewReader("abc"), func(string) bool { calls++; return false }) || calls != 1 {
		t.Fatalf("refused: %d calls", calls)
	}
}

// FuzzStreamUTF8: whatever the bytes and however they are split, every
// piece is valid UTF-8, and valid input comes out unchanged.
func FuzzStreamUTF8(f *testing.F) {
	f.Add([]byte("a€b"), []byte{2, 2, 1})
	f.Add([]byte("ünïcode ✓ 😀"), []byte{1})
	f.Add([]byte("\xf0\x9f\x98"), []byte{3})
	f.Add([]byte("x\xffy\xe2\x82"), []byte{1, 4})
	f.Fuzz(func(t *testing.T, data, split []byte) {
		sizes := make([]int, len(split))
		for i, b := range split {
			sizes[i] = int(b)
		}
		got := stream(data, sizes)
		for _, d := range got {
			if d == "" || !utf8.ValidString(d) {
				t.Fatalf("piece %q", d)
			}
		}
		if utf8.Valid(data) && strings.Join(got, "") != string(data) {
			t.Fatalf("valid input changed: %q → %q", data, got)
		}
		if !utf8.Valid(data) && !strings.ContainsRune(strings.Join(got, ""), utf8.RuneError) {
			t.Fatalf("invalid input without U+FFFD: %q → %q", data, got)
		}
	})
}

// TestDrainBoundsEachRead: once draining, a read gives up only after
// waiting the drain time for data, however long after the drain began it
// starts; data already in the pipe is always read.
func TestDrainBoundsEachRead(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close(); _ = w.Close() }()
	p := &proc{stdout: r, stderr: r}
	const d = 20 * time.Millisecond
	p.drain(d)
	time.Sleep(3 * d) // the reader was busy elsewhere, past the first deadline
	if _, err := w.Write([]byte("late but buffered")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := drainReader{r, p}.Read(buf)
	if err != nil || string(buf[:n]) != "late but buffered" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	// Nothing more while w stays open (a process that left the group):
	// the read ends, bounded.
	if _, err := (drainReader{r, p}).Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read with nothing to read: %v", err)
	}
	p.drain(-1)
	if _, err := w.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := (drainReader{r, p}).Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after drain(-1): %v", err)
	}
}
