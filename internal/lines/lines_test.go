package lines

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll reads r to its end; a skipped line shows as "<skipped N>".
func readAll(t *testing.T, r io.Reader, max int) []string {
	t.Helper()
	lr := NewReader(r, max)
	var out []string
	for {
		b, sk, err := lr.Next()
		if errors.Is(err, io.EOF) {
			if b != nil || sk != 0 {
				t.Fatalf("io.EOF with line %q, skipped %d", b, sk)
			}
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if sk > 0 {
			if b != nil {
				t.Fatalf("skipped %d with line %q", sk, b)
			}
			out = append(out, "<skipped "+itoa(sk)+">")
			continue
		}
		out = append(out, string(b))
	}
}

func itoa(n int64) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		if n /= 10; n == 0 {
			return string(b)
		}
	}
}

func TestLines(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"", 10, ""},
		{"\n", 10, ""},
		{"a\r\nbb\n\nlast", 10, "a|bb||last"},
		{"a\nb\n", 10, "a|b"},
		{"a\r\r\n", 10, "a\r"},
		{"\r", 10, ""},
		// The bound counts the bytes before "\n", a "\r" included.
		{"0123456789\n0123456789a\n012345678\r\n", 10, "0123456789|<skipped 11>|012345678"},
		// A last line without "\n" has the same bound.
		{"ok\n0123456789a", 10, "ok|<skipped 11>"},
		{"ok\n0123456789", 10, "ok|0123456789"},
		{"ok\n" + strings.Repeat("x", 100) + "\nafter\n", 50, "ok|<skipped 100>|after"},
	} {
		for name, r := range map[string]io.Reader{
			"whole":    strings.NewReader(c.in),
			"one byte": iotest.OneByteReader(strings.NewReader(c.in)),
		} {
			if got := strings.Join(readAll(t, r, c.max), "|"); got != c.want {
				t.Errorf("%q, max %d, %s: %q, want %q", c.in, c.max, name, got, c.want)
			}
		}
	}
}

// A line far over the bound and over the read buffer is skipped without
// being held, and its size is still counted whole.
func TestSkipHoldsNothing(t *testing.T) {
	const n = 3 << 20
	in := io.MultiReader(strings.NewReader("first\n"), bytes.NewReader(bytes.Repeat([]byte("z"), n)), strings.NewReader("\nnext"))
	lr := NewReader(in, 1<<10)
	if b, _, err := lr.Next(); string(b) != "first" || err != nil {
		t.Fatalf("%q %v", b, err)
	}
	if b, sk, err := lr.Next(); b != nil || sk != n || err != nil || cap(lr.buf) > 1<<10 {
		t.Fatalf("%q, skipped %d, %v, buffer %d", b, sk, err, cap(lr.buf))
	}
	if b, sk, err := lr.Next(); string(b) != "next" || sk != 0 || err != nil {
		t.Fatalf("%q %d %v", b, sk, err)
	}
	if _, _, err := lr.Next(); !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
}

// A 64 MiB line is read and handed on whole; its buffer is not kept.
func TestLine64MiB(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 64 MiB")
	}
	big := bytes.Repeat([]byte("y"), 64<<20)
	in := io.MultiReader(strings.NewReader("first\n"), bytes.NewReader(big), strings.NewReader("\nnext\n"))
	lr := NewReader(in, 0)
	if lr.Max() != DefaultMax {
		t.Fatalf("Max = %d", lr.Max())
	}
	for i, n := range []int{5, 64 << 20, 4} {
		b, sk, err := lr.Next()
		if err != nil || sk != 0 || len(b) != n {
			t.Fatalf("line %d: %d bytes, skipped %d, %v", i, len(b), sk, err)
		}
	}
	if _, _, err := lr.Next(); !errors.Is(err, io.EOF) || cap(lr.buf) > keepBuf {
		t.Errorf("%v, buffer %d", err, cap(lr.buf))
	}
}

// A read error is returned as it is, without the line it cut short.
func TestReadError(t *testing.T) {
	boom := errors.New("boom")
	lr := NewReader(io.MultiReader(strings.NewReader("whole\npart"), iotest.ErrReader(boom)), 10)
	if b, _, err := lr.Next(); string(b) != "whole" || err != nil {
		t.Fatalf("%q %v", b, err)
	}
	if b, sk, err := lr.Next(); b != nil || sk != 0 || !errors.Is(err, boom) {
		t.Fatalf("%q %d %v", b, sk, err)
	}
}

// countReader counts the reads made of it.
type countReader struct {
	r io.Reader
	n int
}

func (c *countReader) Read(b []byte) (int, error) {
	c.n++
	return c.r.Read(b)
}

func TestLineBuffered(t *testing.T) {
	pr, pw := io.Pipe()
	cr := &countReader{r: pr}
	lr := NewReader(cr, 0)
	if lr.LineBuffered() {
		t.Fatal("a line is buffered before any read")
	}
	go func() { _, _ = io.WriteString(pw, "a\nb\nc") }()
	if b, _, err := lr.Next(); string(b) != "a" || err != nil {
		t.Fatalf("%q %v", b, err)
	}
	if !lr.LineBuffered() {
		t.Fatal("b is not reported buffered")
	}
	reads := cr.n
	if b, _, _ := lr.Next(); string(b) != "b" || cr.n != reads {
		t.Fatalf("%q after %d more reads", b, cr.n-reads)
	}
	if lr.LineBuffered() {
		t.Fatal("an unfinished line is reported buffered")
	}
	_ = pw.Close()
	if b, _, err := lr.Next(); string(b) != "c" || err != nil {
		t.Fatalf("%q %v", b, err)
	}
	if _, _, err := lr.Next(); !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
}

// FuzzReader checks the Reader against a plain split of its input, for any
// bytes, any bound and reads of any size: every line comes back whole or,
// over the bound, as its exact size; io.EOF comes once, after the last
// line; LineBuffered never promises a line that needs a read. Seeds:
// testdata/fuzz/FuzzReader (from the stream readers of the claudecode and
// acp adapters, which this package replaced).
func FuzzReader(f *testing.F) {
	f.Add([]byte("a\nb\r\n\nc"), 4)
	f.Add([]byte("\n\n\n"), 1)
	f.Add([]byte("0123456789\nab"), 3)
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n"), 64)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max <= 0 || max > 1<<16 {
			return
		}
		want := bytes.Split(in, []byte("\n"))
		if len(want[len(want)-1]) == 0 {
			want = want[:len(want)-1] // nothing after the last "\n"
		}
		cr := &countReader{r: iotest.HalfReader(bytes.NewReader(in))}
		lr := NewReader(cr, max)
		for i := 0; ; i++ {
			buffered, reads := lr.LineBuffered(), cr.n
			b, sk, err := lr.Next()
			if buffered && cr.n != reads {
				t.Fatalf("line %d: buffered, yet Next read", i)
			}
			if i == len(want) {
				if !errors.Is(err, io.EOF) || b != nil || sk != 0 {
					t.Fatalf("after the last line: %q, skipped %d, %v", b, sk, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("line %d of %d: %v", i, len(want), err)
			}
			if len(want[i]) > max {
				if b != nil || sk != int64(len(want[i])) {
					t.Fatalf("line %d (%d bytes, bound %d): %q, skipped %d", i, len(want[i]), max, b, sk)
				}
				continue
			}
			if w := bytes.TrimSuffix(want[i], []byte("\r")); sk != 0 || !bytes.Equal(b, w) {
				t.Fatalf("line %d: %q, skipped %d, want %q", i, b, sk, w)
			}
		}
	})
}
