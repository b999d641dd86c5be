package childproc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/ferry-dev/ferry/internal/procgroup"
)

// Stream is a child whose standard output and error share one pipe, read
// as bytes rather than lines, with standard input from /dev/null: a
// command whose interleaved output is its result (the Bash tool). It is
// ended in steps (SIGTERM, then SIGKILL) rather than killed at once, so a
// command gets to finish writing.
//
// Guarantees, besides Proc's session of its own and plain pipe:
//
//   - read gets the output on a goroutine of its own until EOF, or until
//     End's drain bound has passed (the pipe is closed under it then).
//   - End returns within the grace, plus the reap bound, plus the drain
//     bound, whatever the child's tree does.
//
// A Stream is safe for concurrent use, but End is called once.
type Stream struct {
	cmd      *exec.Cmd
	group    *procgroup.Group
	r        *os.File
	readDone chan struct{}
	waited   chan struct{}
}

// StreamEnd bounds Stream.End's steps.
type StreamEnd struct {
	// Grace is how long the group's processes get between SIGTERM and
	// SIGKILL.
	Grace time.Duration
	// ReapWait bounds the wait for the leader to be reaped after SIGKILL:
	// only a process stuck in the kernel takes longer.
	ReapWait time.Duration
	// Drain bounds how long the output is still read once the group is
	// gone: a process that left the group may hold the pipe for ever.
	Drain time.Duration
}

// StartStream starts cmd in a session of its own (procgroup.Start) with
// its stdout and stderr on one pipe and its stdin from /dev/null, and
// reads the pipe with read on a goroutine. cmd's Stdin, Stdout and Stderr
// must be nil. A pipe that cannot be made gives an error wrapping ErrPipe;
// a start that fails gives procgroup.Start's error as it is.
func StartStream(cmd *exec.Cmd, read func(io.Reader)) (*Stream, error) {
	if cmd.Stdin != nil || cmd.Stdout != nil || cmd.Stderr != nil {
		return nil, errors.New("childproc: StartStream owns the command's stdio")
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPipe, err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	group, err := procgroup.Start(cmd)
	// The child holds its own copy; ours must go so EOF means "every
	// process holding the output has closed it".
	_ = w.Close()
	if err != nil {
		_ = r.Close()
		return nil, err
	}
	s := &Stream{cmd: cmd, group: group, r: r, readDone: make(chan struct{}), waited: make(chan struct{})}
	go func() {
		defer close(s.readDone)
		read(r)
	}()
	go func() {
		defer close(s.waited)
		_ = cmd.Wait() // the status is read from cmd.ProcessState
	}()
	return s, nil
}

// Exited is closed once the leader was reaped.
func (s *Stream) Exited() <-chan struct{} { return s.waited }

// Group is the child's session and process group.
func (s *Stream) Group() *procgroup.Group { return s.group }

// End stops what is left of the child and returns once the output was
// read and closed. With stop (the call was cancelled or timed out), the
// group gets SIGTERM, then SIGKILL once o.Grace passed without the leader
// exiting, and the leader's reaping is awaited at most o.ReapWait. Without
// stop (the leader exited on its own), what it left in its group gets
// SIGTERM: it belongs to the command and ends with it. Either way,
// processes that were signalled get until the grace ends to close the
// output, then SIGKILL; then the output is read at most o.Drain longer.
//
// It returns the leader's state, and whether it was reaped at all.
func (s *Stream) End(stop bool, o StreamEnd) (state *os.ProcessState, reaped bool) {
	var graceEnd time.Time
	if stop {
		s.group.Terminate()
		graceEnd = time.Now().Add(o.Grace)
		if !waitUntil(s.waited, graceEnd) {
			s.group.Kill()
			waitUntil(s.waited, time.Now().Add(o.ReapWait))
		}
	} else if s.group.Terminate() {
		graceEnd = time.Now().Add(o.Grace)
	}
	if !graceEnd.IsZero() {
		// Survivors that still write get the grace to finish; once the
		// output is closed there is nothing to wait for.
		waitUntil(s.readDone, graceEnd)
		s.group.Kill()
	}
	_ = s.r.SetReadDeadline(time.Now().Add(o.Drain))
	<-s.readDone
	_ = s.r.Close()
	select {
	case <-s.waited:
		return s.cmd.ProcessState, true
	default:
		return nil, false
	}
}

// waitUntil waits for ch to close or the deadline to pass; it reports
// whether ch closed.
func waitUntil(ch <-chan struct{}, deadline time.Time) bool {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}
