package lsp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.lsp.dev/jsonrpc2"
)

// MaxMessage bounds one message a server sends: jsonrpc2.NewStream
// allocates whatever Content-Length says (up to 2 GiB), so a confused
// server could make ferry allocate that much.
const MaxMessage = 32 << 20

// errTooLarge marks a message over MaxMessage; the connection ends.
var errTooLarge = errors.New("lsp: message over the size limit")

// stream is jsonrpc2's LSP framing (Content-Length headers) with a bound
// on what is read. Writes are serialized by jsonrpc2.Conn.
type stream struct {
	rw io.ReadWriteCloser
	in *bufio.Reader
}

var _ jsonrpc2.Stream = (*stream)(nil)

func newStream(rw io.ReadWriteCloser) *stream {
	return &stream{rw: rw, in: bufio.NewReader(rw)}
}

func (s *stream) Read(ctx context.Context) (jsonrpc2.Message, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	var total, length int64
	for {
		line, err := s.in.ReadString('\n')
		total += int64(len(line))
		if err != nil {
			return nil, total, fmt.Errorf("lsp: read header: %w", err)
		}
		if len(line) > 4096 {
			return nil, total, errors.New("lsp: header line too long")
		}
		line = strings.TrimSpace(line)
		if line == "" {
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return nil, total, fmt.Errorf("lsp: bad header line %q", line)
		}
		if strings.EqualFold(strings.TrimSpace(name), jsonrpc2.HdrContentLength) {
			if length, err = strconv.ParseInt(strings.TrimSpace(value), 10, 64); err != nil || length <= 0 {
				return nil, total, fmt.Errorf("lsp: bad Content-Length %q", value)
			}
		}
	}
	if length == 0 {
		return nil, total, errors.New("lsp: no Content-Length")
	}
	if length > MaxMessage {
		return nil, total, fmt.Errorf("%w: %d bytes", errTooLarge, length)
	}
	data := make([]byte, length)
	if _, err := io.ReadFull(s.in, data); err != nil {
		return nil, total, fmt.Errorf("lsp: read body: %w", err)
	}
	msg, err := jsonrpc2.DecodeMessage(data)
	return msg, total + length, err
}

func (s *stream) Write(ctx context.Context, msg jsonrpc2.Message) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	data, err := json.Marshal(msg)
	if err != nil {
		return 0, fmt.Errorf("lsp: marshal: %w", err)
	}
	// One write per message: header and body never interleave with another
	// writer's, whatever the caller's locking.
	buf := make([]byte, 0, len(data)+32)
	buf = append(buf, jsonrpc2.HdrContentLength+": "...)
	buf = strconv.AppendInt(buf, int64(len(data)), 10)
	buf = append(buf, jsonrpc2.HdrContentSeparator...)
	buf = append(buf, data...)
	n, err := s.rw.Write(buf)
	if err != nil {
		return int64(n), fmt.Errorf("lsp: write: %w", err)
	}
	return int64(n), nil
}

func (s *stream) Close() error { return s.rw.Close() }

// pipes joins the server's stdout (read) and stdin (write) into the one
// ReadWriteCloser the stream wants; Close closes both.
type pipes struct {
	io.Reader
	io.Writer
	closers []io.Closer
}

func (p *pipes) Close() error {
	var errs []error
	for _, c := range p.closers {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
