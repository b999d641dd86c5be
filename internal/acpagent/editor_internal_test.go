package acpagent

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/ferry-dev/ferry/internal/editorlink"
	"github.com/ferry-dev/ferry/internal/tools"
)

// fakeEditor is the client side of what editorFiles and editorTerminals
// ask: buffers over the disk, and real processes as terminals.
type fakeEditor struct {
	mu       sync.Mutex
	buffers  map[string]string
	cmds     map[string]*exec.Cmd
	outs     map[string]*strings.Builder
	done     map[string]chan struct{}
	killed   []string
	released []string
	updates  []acp.SessionNotification
}

func (f *fakeEditor) ReadTextFile(_ context.Context, p acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.buffers[p.Path]; ok {
		return acp.ReadTextFileResponse{Content: t}, nil
	}
	if strings.HasSuffix(p.Path, ".bad") {
		return acp.ReadTextFileResponse{}, acp.NewInvalidParams(map[string]any{"error": "cannot read that"})
	}
	b, err := os.ReadFile(p.Path)
	if err != nil {
		// ACP's "resource not found", as editors answer for a file they
		// do not have.
		return acp.ReadTextFileResponse{}, &acp.RequestError{Code: -32002, Message: "Resource not found", Data: map[string]any{"uri": p.Path}}
	}
	return acp.ReadTextFileResponse{Content: string(b)}, nil
}

func (f *fakeEditor) WriteTextFile(_ context.Context, p acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.buffers[p.Path] = p.Content
	return acp.WriteTextFileResponse{}, nil
}

func (f *fakeEditor) RequestPermission(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return acp.RequestPermissionResponse{}, errors.New("not asked here")
}

func (f *fakeEditor) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	f.mu.Lock()
	f.updates = append(f.updates, n)
	f.mu.Unlock()
	return nil
}

type lockedBuilder struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (l lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (f *fakeEditor) CreateTerminal(_ context.Context, p acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := "t" + string(rune('0'+len(f.cmds)))
	cmd := exec.Command(p.Command, p.Args...) //nolint:gosec // the test's command
	if p.Cwd != nil {
		cmd.Dir = *p.Cwd
	}
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = lockedBuilder{&f.mu, out}, lockedBuilder{&f.mu, out}
	if err := cmd.Start(); err != nil {
		return acp.CreateTerminalResponse{}, acp.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	f.cmds[id], f.outs[id], f.done[id] = cmd, out, done
	return acp.CreateTerminalResponse{TerminalId: id}, nil
}

func (f *fakeEditor) KillTerminal(_ context.Context, p acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.killed = append(f.killed, p.TerminalId)
	_ = f.cmds[p.TerminalId].Process.Kill()
	return acp.KillTerminalResponse{}, nil
}

func (f *fakeEditor) TerminalOutput(_ context.Context, p acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return acp.TerminalOutputResponse{Output: f.outs[p.TerminalId].String()}, nil
}

func (f *fakeEditor) ReleaseTerminal(_ context.Context, p acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = append(f.released, p.TerminalId)
	return acp.ReleaseTerminalResponse{}, nil
}

func (f *fakeEditor) WaitForTerminalExit(ctx context.Context, p acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	f.mu.Lock()
	done, cmd := f.done[p.TerminalId], f.cmds[p.TerminalId]
	f.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return acp.WaitForTerminalExitResponse{}, ctx.Err()
	}
	code := cmd.ProcessState.ExitCode()
	return acp.WaitForTerminalExitResponse{ExitCode: &code}, nil
}

// linked is an agent-side connection wired to a fakeEditor over pipes.
func linked(t *testing.T) (*acp.AgentSideConnection, *fakeEditor) {
	t.Helper()
	ar, cw := io.Pipe()
	cr, aw := io.Pipe()
	f := &fakeEditor{buffers: map[string]string{}, cmds: map[string]*exec.Cmd{}, outs: map[string]*strings.Builder{}, done: map[string]chan struct{}{}}
	a := &Agent{}
	conn := acp.NewAgentSideConnection(a, aw, ar)
	acp.NewClientSideConnection(f, cw, cr)
	t.Cleanup(func() { _ = cw.Close(); _ = aw.Close() })
	return conn, f
}

func TestEditorFilesReadTheBuffer(t *testing.T) {
	conn, f := linked(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(p, []byte("on disk"), 0o600); err != nil {
		t.Fatal(err)
	}
	var files editorlink.Files = &editorFiles{conn: conn, sid: "s1"}
	ctx := context.Background()
	if got, err := files.ReadTextFile(ctx, p); err != nil || got != "on disk" {
		t.Fatalf("read %q, %v", got, err)
	}
	f.mu.Lock()
	f.buffers[p] = "unsaved"
	f.mu.Unlock()
	if got, err := files.ReadTextFile(ctx, p); err != nil || got != "unsaved" {
		t.Fatalf("read %q, %v; want the unsaved buffer", got, err)
	}
	if err := files.WriteTextFile(ctx, p, "new"); err != nil {
		t.Fatal(err)
	}
	if got, _ := files.ReadTextFile(ctx, p); got != "new" {
		t.Errorf("after the write the editor holds %q", got)
	}
	// A file the editor does not have is the disk's to serve (overlay
	// falls back on fs.ErrNotExist); any other failure is not.
	if _, err := files.ReadTextFile(ctx, filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("reading a missing file: %v, want one wrapping fs.ErrNotExist", err)
	}
	if _, err := files.ReadTextFile(ctx, filepath.Join(dir, "a.bad")); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an editor's other failure: %v, want an error that is not fs.ErrNotExist", err)
	}
}

func TestEditorTerminalRunsAndReleases(t *testing.T) {
	conn, f := linked(t)
	var terms editorlink.Terminals = &editorTerminals{conn: conn, sid: "s1"}
	ctx := tools.WithToolUseID(context.Background(), "toolu_1")
	out, _, exit, err := terms.Run(ctx, editorlink.Command{Command: "sh", Args: []string{"-c", "echo out; exit 3"}, Cwd: t.TempDir()})
	if err != nil || out != "out\n" || exit.Code == nil || *exit.Code != 3 {
		t.Fatalf("Run: %q %+v %v", out, exit, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		f.mu.Lock()
		n, rel, ups := len(f.killed), len(f.released), len(f.updates)
		f.mu.Unlock()
		if rel == 1 && ups == 1 {
			if n != 0 {
				t.Errorf("a command that exited was killed")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("released %d, updates %d", rel, ups)
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.mu.Lock()
	u := f.updates[0].Update.ToolCallUpdate
	f.mu.Unlock()
	if u == nil || u.ToolCallId != "toolu_1" || len(u.Content) != 1 || u.Content[0].Terminal == nil {
		t.Errorf("the tool call was not shown the terminal: %+v", u)
	}
	// A cancelled command is killed and its terminal released.
	cctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, _, _, err := terms.Run(cctx, editorlink.Command{Command: "sleep", Args: []string{"30"}}); err == nil {
		t.Error("a cancelled command returned no error")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the cancelled command returned after %s", d)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.killed) != 1 || len(f.released) != 2 {
		t.Errorf("killed %v, released %v", f.killed, f.released)
	}
}
