package acpagent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/ferry-dev/ferry/internal/editorlink"
	"github.com/ferry-dev/ferry/internal/tools"
)

// editorFiles is the editor's file system (fs/read_text_file,
// fs/write_text_file) for one session.
type editorFiles struct {
	conn *acp.AgentSideConnection
	sid  acp.SessionId
}

var _ editorlink.Files = (*editorFiles)(nil)

func (f *editorFiles) ReadTextFile(ctx context.Context, path string) (string, error) {
	r, err := f.conn.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionId: f.sid, Path: path})
	var re *acp.RequestError
	if errors.As(err, &re) && re.Code == codeResourceGone {
		// The editor has no such file: the disk serves it (overlay's
		// fallback), as it does for a file the editor never opened.
		return "", fmt.Errorf("the editor has no %s: %w", path, fs.ErrNotExist)
	}
	if err != nil {
		return "", fmt.Errorf("the editor could not read %s: %w", path, err)
	}
	return r.Content, nil
}

func (f *editorFiles) WriteTextFile(ctx context.Context, path, content string) error {
	if _, err := f.conn.WriteTextFile(ctx, acp.WriteTextFileRequest{SessionId: f.sid, Path: path, Content: content}); err != nil {
		return fmt.Errorf("the editor could not write %s: %w", path, err)
	}
	return nil
}

// editorTerminals runs commands in the editor's terminals (terminal/*)
// for one session.
type editorTerminals struct {
	conn *acp.AgentSideConnection
	sid  acp.SessionId
}

var _ editorlink.Terminals = (*editorTerminals)(nil)

// releaseWait bounds the kill and release of a terminal whose command's
// context ended.
const releaseWait = 5 * time.Second

func (t *editorTerminals) Run(ctx context.Context, cmd editorlink.Command) (string, bool, editorlink.Exit, error) {
	req := acp.CreateTerminalRequest{SessionId: t.sid, Command: cmd.Command, Args: cmd.Args}
	for k, v := range cmd.Env {
		req.Env = append(req.Env, acp.EnvVariable{Name: k, Value: v})
	}
	if cmd.Cwd != "" {
		req.Cwd = acp.Ptr(cmd.Cwd)
	}
	if cmd.OutputByteLimit > 0 {
		req.OutputByteLimit = acp.Ptr(cmd.OutputByteLimit)
	}
	created, err := t.conn.CreateTerminal(ctx, req)
	if err != nil {
		return "", false, editorlink.Exit{}, fmt.Errorf("the editor could not open a terminal: %w", err)
	}
	id := created.TerminalId
	// Whatever happens, the terminal is released (killed first when the
	// command was cut short).
	done := false
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseWait)
		defer cancel()
		if !done {
			_, _ = t.conn.KillTerminal(rctx, acp.KillTerminalRequest{SessionId: t.sid, TerminalId: id})
		}
		_, _ = t.conn.ReleaseTerminal(rctx, acp.ReleaseTerminalRequest{SessionId: t.sid, TerminalId: id})
	}()
	if use := tools.ToolUseID(ctx); use != "" {
		_ = t.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: t.sid,
			Update: acp.UpdateToolCall(acp.ToolCallId(use), acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolTerminalRef(id)}))})
	}
	w, err := t.conn.WaitForTerminalExit(ctx, acp.WaitForTerminalExitRequest{SessionId: t.sid, TerminalId: id})
	if err != nil {
		return "", false, editorlink.Exit{}, fmt.Errorf("the editor's terminal: %w", err)
	}
	done = true
	out, err := t.conn.TerminalOutput(ctx, acp.TerminalOutputRequest{SessionId: t.sid, TerminalId: id})
	if err != nil {
		return "", false, editorlink.Exit{}, fmt.Errorf("the editor's terminal output: %w", err)
	}
	exit := editorlink.Exit{Code: w.ExitCode}
	if w.Signal != nil {
		exit.Signal = *w.Signal
	}
	return out.Output, out.Truncated, exit, nil
}
