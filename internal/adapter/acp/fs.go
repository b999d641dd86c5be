package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/ferry-dev/ferry/internal/runecut"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/internal/textenc"
	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/internal/vfs"
)

// The client side of ACP's file system: fs/read_text_file and
// fs/write_text_file, served on the session's vfs (confined to the
// workspace) with the file tools' read-before-write contract.
//
// Errors are JSON-RPC errors: -32602 for bad params, -32002 (ACP's
// resource-not-found) for a missing file, -32603 for internal failures,
// and for every refusal of the contract the file tools' numeric code
// (positive, outside JSON-RPC's reserved range: 2 not read, 3 stale, 5
// outside the workspace, 15 refused by the mode or a permission rule of
// the prompt, …). data carries {"ferry_code": N} in every case. Messages
// name the path only as the agent gave it (or workspace-relative) and never
// carry internal error text.

// maxReadBytes is the largest file fs/read_text_file serves: an ACP read
// returns the file's text in one message.
const maxReadBytes = 16 << 20

// onReadTextFile serves fs/read_text_file: the file's text (LF line
// endings, no byte-order mark), from line (1-based) for limit lines. A read
// that returns every line counts as a full read for a later write.
func (s *session) onReadTextFile(m *message) {
	var p readTextFileParams
	if err := json.Unmarshal(m.Params, &p); err != nil || p.Path == "" {
		s.replyError(m.ID, fsError(rpcInvalidParams, tools.CodeInvalidInput, "invalid params: path is required"))
		return
	}
	if p.SessionID != s.sessionID() {
		s.replyError(m.ID, fsError(rpcInvalidParams, tools.CodeInvalidInput, "invalid params: unknown sessionId"))
		return
	}
	start, count := 1, -1
	if p.Line != nil {
		if *p.Line < 1 {
			s.replyError(m.ID, fsError(rpcInvalidParams, tools.CodeInvalidInput, "invalid params: line is 1-based"))
			return
		}
		start = *p.Line
	}
	if p.Limit != nil {
		if *p.Limit < 1 {
			s.replyError(m.ID, fsError(rpcInvalidParams, tools.CodeInvalidInput, "invalid params: limit must be 1 or more"))
			return
		}
		count = *p.Limit
	}
	if s.fileDenied(p.Path, true, "Read") {
		s.replyError(m.ID, ruleRefusal("reading", s.shown(p.Path)))
		return
	}
	content, e := s.readText(p.Path, start, count)
	if e != nil {
		s.replyError(m.ID, e)
		return
	}
	s.reply(m.ID, acpsdk.ReadTextFileResponse{Content: content})
}

// readText reads name through the vfs and records the read.
func (s *session) readText(name string, start, count int) (string, *rpcError) {
	f, err := s.fs.Open(name)
	if err != nil {
		return "", s.fsFailure(name, err)
	}
	defer func() { _ = f.Close() }()
	info := f.Info()
	if info.Stamp.Size > maxReadBytes {
		return "", fsError(tools.CodeTooLarge, tools.CodeTooLarge,
			fmt.Sprintf("%s is larger than %d MiB; ferry serves text files up to that size", name, maxReadBytes>>20))
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxReadBytes+1))
	if err != nil {
		return "", s.fsFailure(name, err)
	}
	if len(raw) > maxReadBytes {
		return "", fsError(tools.CodeTooLarge, tools.CodeTooLarge,
			fmt.Sprintf("%s is larger than %d MiB; ferry serves text files up to that size", name, maxReadBytes>>20))
	}
	text, err := textenc.Decode(raw)
	if err != nil || text.Encoding == textenc.Legacy || bytes.IndexByte(raw, 0) >= 0 && text.Encoding == textenc.UTF8 {
		return "", fsError(tools.CodeEncoding, tools.CodeEncoding, fmt.Sprintf("%s is not a UTF-8 or UTF-16 text file", name))
	}
	view := text.View
	lines := strings.SplitAfter(view, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1] // the text after a final newline is no line
	}
	from := min(start-1, len(lines))
	to := len(lines)
	if count >= 0 && count < to-from {
		to = from + count
	}
	out := strings.Join(lines[from:to], "")
	partial := from > 0 || to < len(lines)
	view = "all"
	if partial {
		view = fmt.Sprintf("lines %d-%d", from+1, to)
	}
	s.env.State.Record(tools.ReadEntry{Path: info.Path, Stamp: info.Stamp, Hash: tools.HashBytes(raw), Partial: partial, View: view, ReadAt: time.Now()})
	return out, nil
}

// onWriteTextFile serves fs/write_text_file through the Write tool:
// confined, atomic, refused in plan and review mode, and for an existing
// file only after a full read of its current content.
func (s *session) onWriteTextFile(m *message) {
	var p writeTextFileParams
	if err := json.Unmarshal(m.Params, &p); err != nil || p.Path == "" || p.Content == nil {
		s.replyError(m.ID, fsError(rpcInvalidParams, tools.CodeInvalidInput, "invalid params: path and content are required"))
		return
	}
	if p.SessionID != s.sessionID() {
		s.replyError(m.ID, fsError(rpcInvalidParams, tools.CodeInvalidInput, "invalid params: unknown sessionId"))
		return
	}
	if ok, why := permission.ModeAllows(s.currentMode(), permission.Call{Tool: "Write", Path: p.Path}); !ok {
		s.replyError(m.ID, fsError(tools.CodeDenied, tools.CodeDenied, "refused: "+why))
		return
	}
	if s.fileDenied(p.Path, false, "Write", "Edit") {
		s.replyError(m.ID, ruleRefusal("writing", s.shown(p.Path)))
		return
	}
	input, err := json.Marshal(map[string]string{"file_path": p.Path, "content": *p.Content})
	if err != nil {
		s.replyError(m.ID, fsError(rpcInternalError, tools.CodeInternal, "internal error"))
		return
	}
	callID, claimed := s.writeCallID(p.Path, p.metaToolCallID())
	if _, err := tools.Invoke(s.ctx, s.env, tools.Write{}, callID, input); err != nil {
		s.replyError(m.ID, s.writeFailure(p.Path, err))
		return
	}
	if !claimed {
		callID = ""
	}
	s.handOver(s.turn, callID, p.Path)
	s.reply(m.ID, acpsdk.WriteTextFileResponse{})
}

// writeCallID names the tool call an fs/write_text_file belongs to, for the
// session's file history (undo of that call's diff card) and the artifact's
// tool_use id: the toolCallId the request's _meta carries (meta), else the
// running turn's unfinished edit call that names the path, else its only
// unfinished edit call, else an id of the write's own (claimed false). ACP's
// request has no tool call id field, so this is the best ferry can tell.
// Called on the dispatcher, which owns s.turn.
func (s *session) writeCallID(path, meta string) (id string, claimed bool) {
	if meta != "" {
		return runecut.Prefix(meta, 256), true
	}
	s.fsWrites++
	own := fmt.Sprintf("acp-fs-write-%d", s.fsWrites)
	ts := s.turn
	if ts == nil {
		return own, false
	}
	var edits []string
	for id, st := range ts.tools {
		if st.finished || st.kind != "edit" {
			continue
		}
		for _, l := range st.locations {
			if l == path || s.shown(l) == s.shown(path) {
				return runecut.Prefix(id, 256), true
			}
		}
		edits = append(edits, id)
	}
	if len(edits) == 1 {
		return runecut.Prefix(edits[0], 256), true
	}
	return own, false
}

// ruleRefusal is the error of an fs request a permission rule of the
// prompt (config_overrides.denied_tools) denies.
func ruleRefusal(what, shown string) *rpcError {
	return fsError(tools.CodeDenied, tools.CodeDenied,
		"refused: a permission rule of this prompt denies "+what+" "+shown+"; do not retry it")
}

// fsError builds a coded error.
func fsError(rpcCode, ferryCode int, msg string) *rpcError {
	data, _ := json.Marshal(map[string]int{"ferry_code": ferryCode}) // always encodes
	return &rpcError{Code: rpcCode, Message: msg, Data: data}
}

// fsFailure maps a vfs error of a read to a safe coded error.
func (s *session) fsFailure(name string, err error) *rpcError {
	shown := s.shown(name)
	switch {
	case errors.Is(err, vfs.ErrOutside):
		return fsError(tools.CodeOutside, tools.CodeOutside, shown+" is outside the workspace; ferry only serves files inside it")
	case errors.Is(err, vfs.ErrNotRegular):
		return fsError(tools.CodeNotRegular, tools.CodeNotRegular, shown+" is not a regular file")
	case errors.Is(err, vfs.ErrIsDir):
		return fsError(tools.CodeIsDirectory, tools.CodeIsDirectory, shown+" is a directory")
	case errors.Is(err, vfs.ErrNotExist):
		return fsError(rpcNotFound, tools.CodeNotFound, shown+" does not exist")
	case errors.Is(err, vfs.ErrPermission):
		return fsError(tools.CodePermission, tools.CodePermission, shown+" cannot be read: permission denied")
	}
	s.log.Warn("acp: fs request failed", "path", name, "err", err)
	return fsError(rpcInternalError, tools.CodeInternal, "internal error: the client's log has the details")
}

// writeFailure maps a Write failure. The contract's own messages (not
// read, stale, no change) name workspace-relative paths and say what to
// do, so they go to the agent as they are; the rest get fixed sentences.
func (s *session) writeFailure(name string, err error) *rpcError {
	code := tools.CodeOf(err)
	shown := s.shown(name)
	switch code {
	case tools.CodeNotRead, tools.CodeStale:
		var te *tools.Error
		if errors.As(err, &te) {
			return fsError(code, code, te.Message)
		}
	case tools.CodeOutside:
		return fsError(code, code, shown+" is outside the workspace; ferry only writes files inside it")
	case tools.CodeNotRegular:
		return fsError(code, code, shown+" is not a regular file")
	case tools.CodeIsDirectory:
		return fsError(code, code, shown+" is a directory")
	case tools.CodePermission:
		return fsError(code, code, shown+" is read-only; ferry does not override a file's permissions")
	case tools.CodeHardLinked:
		return fsError(code, code, shown+" has other hard links (maybe outside the workspace); ferry does not write it")
	case tools.CodeNotFound:
		return fsError(rpcNotFound, code, shown+" cannot be created: a folder on its path is a file or missing")
	case tools.CodeInvalidInput:
		return fsError(rpcInvalidParams, code, "invalid params: "+shown+" is not a valid path")
	case tools.CodeEncoding:
		return fsError(code, code, shown+" cannot be written as text in its encoding")
	}
	s.log.Warn("acp: fs/write_text_file failed", "path", name, "code", code, "err", err)
	return fsError(rpcInternalError, tools.CodeInternal, "internal error: the client's log has the details")
}

// shown names a path in a message: workspace-relative inside the
// workspace, else as the agent gave it (which tells it nothing new).
func (s *session) shown(name string) string {
	if rel, ok := s.relPath(name); ok {
		if rel == "." {
			return "the workspace"
		}
		return rel
	}
	return runecut.Prefix(filepath.Clean(name), 1024)
}
