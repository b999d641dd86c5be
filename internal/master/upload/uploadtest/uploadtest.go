// Package uploadtest drives the master's upload endpoint (POST
// /v1/sessions/{session_id}/uploads) for tests, as a browser would or as a
// peer that sends its body slowly or never finishes it, over real
// sockets.
package uploadtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/protocol"
)

// Answer is what an upload got: its status, the coded error's code and
// message, Retry-After, and how long after the start it came (Err when
// none came).
type Answer struct {
	Status     int
	Code, Msg  string
	RetryAfter string
	After      time.Duration
	Err        error
}

// boundary is the multipart boundary of Slow's bodies.
const boundary = "b0undary"

// Slow posts to url (http://host:port/v1/sessions/ID/uploads) with the
// headers h over a connection of its own: a Content-Length of 1 MB and
// the multipart head, then chunk bytes of a text file every gap, never
// finishing unless total > 0, when the body is that many bytes of file
// and ends. It returns at once; the answer (or a read error after 30 s)
// comes on the channel. The connection closes when the test ends.
func Slow(t testing.TB, rawURL string, h http.Header, chunk int, gap time.Duration, total int) <-chan Answer {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	head := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"log.txt\"\r\nContent-Type: text/plain\r\n\r\n"
	tail := "\r\n--" + boundary + "--\r\n"
	length := 1 << 20
	if total > 0 {
		length = len(head) + total + len(tail)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	start := time.Now()
	var req bytes.Buffer
	fmt.Fprintf(&req, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: multipart/form-data; boundary=%s\r\nContent-Length: %d\r\n",
		u.RequestURI(), u.Host, boundary, length)
	_ = h.Write(&req)
	req.WriteString("\r\n" + head)
	if _, err := conn.Write(req.Bytes()); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	go func() {
		sent := 0
		for total <= 0 || sent < total {
			select {
			case <-stop:
				return
			case <-time.After(gap):
			}
			n := chunk
			if total > 0 {
				n = min(n, total-sent)
			}
			if _, err := conn.Write(bytes.Repeat([]byte("a"), n)); err != nil {
				return
			}
			sent += n
		}
		_, _ = io.WriteString(conn, tail)
	}()
	ch := make(chan Answer, 1)
	go func() {
		defer close(stop)
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			ch <- Answer{Err: err, After: time.Since(start)}
			return
		}
		defer func() { _ = resp.Body.Close() }()
		ch <- read(resp, start)
	}()
	return ch
}

// Quick posts a small JSON file to url with the headers h and returns
// the answer.
func Quick(t testing.TB, rawURL string, h http.Header) Answer {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "a.json")
	_, _ = fw.Write([]byte(`{"a":1}`))
	_ = mw.Close()
	req, err := http.NewRequest(http.MethodPost, rawURL, &body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	start := time.Now()
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return Answer{Err: err, After: time.Since(start)}
	}
	defer func() { _ = resp.Body.Close() }()
	return read(resp, start)
}

// Wait is the answer on ch, failing the test when none comes within d.
func Wait(t testing.TB, ch <-chan Answer, d time.Duration, what string) Answer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(d):
		t.Fatalf("%s: no answer in %v", what, d)
		return Answer{}
	}
}

// read is resp as an Answer (the caller closes its body).
func read(resp *http.Response, start time.Time) Answer {
	var body struct {
		Error *protocol.Error `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	a := Answer{Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After"), After: time.Since(start)}
	if body.Error != nil {
		a.Code, a.Msg = body.Error.Code, body.Error.Message
	}
	return a
}
