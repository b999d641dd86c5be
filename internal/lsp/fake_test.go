package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
)

// The fake language server: the test binary run as
//
//	lsp.test lsp-fake MODE LOGFILE
//
// speaks LSP on stdin/stdout with jsonrpc2's own framing and appends
// "start PID" to LOGFILE when it starts. Modes:
//
//	ok         publishes an error for each line with "ERR" and a warning
//	           for each with "WARN" (at their column), after asking the
//	           client for its configuration as gopls does, and after a
//	           stale publish of the previous version
//	noversion  as ok, without versions
//	slow       never publishes
//	crash      exits at the first document it is sent
//	hang-init  never answers initialize
func fakeServer(mode, logFile string) {
	f, err := os.OpenFile(logFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		_, _ = fmt.Fprintf(f, "start %d\n", os.Getpid())
		_ = f.Close()
	}
	conn := jsonrpc2.NewConn(jsonrpc2.NewStream(stdio{}))
	ctx := context.Background()
	conn.Go(ctx, func(ctx context.Context, reply jsonrpc2.Replier, req jsonrpc2.Request) error {
		switch req.Method() {
		case protocol.MethodInitialize:
			if mode == "hang-init" {
				return nil
			}
			return reply(ctx, map[string]any{"capabilities": map[string]any{"textDocumentSync": 1}}, nil)
		case protocol.MethodShutdown:
			return reply(ctx, nil, nil)
		case protocol.MethodExit:
			os.Exit(0)
		case protocol.MethodTextDocumentDidOpen, protocol.MethodTextDocumentDidChange:
			if mode == "crash" {
				os.Exit(3)
			}
			if mode == "slow" {
				return nil
			}
			u, version, text := fakeDocument(req)
			go fakePublish(ctx, conn, mode, u, version, text)
			return nil
		}
		return reply(ctx, nil, nil)
	})
	<-conn.Done()
	os.Exit(0)
}

// fakeDocument reads a didOpen or didChange; a change that carries a
// range is reported as a diagnostic, not applied: ferry sends whole texts.
func fakeDocument(req jsonrpc2.Request) (protocol.DocumentURI, int32, string) {
	if req.Method() == protocol.MethodTextDocumentDidOpen {
		var p protocol.DidOpenTextDocumentParams
		_ = json.Unmarshal(req.Params(), &p)
		return p.TextDocument.URI, p.TextDocument.Version, p.TextDocument.Text
	}
	var p struct {
		TextDocument   protocol.VersionedTextDocumentIdentifier `json:"textDocument"`
		ContentChanges []map[string]any                         `json:"contentChanges"`
	}
	_ = json.Unmarshal(req.Params(), &p)
	text := "ERR: not one whole-text change"
	if len(p.ContentChanges) == 1 {
		if _, ranged := p.ContentChanges[0]["range"]; !ranged {
			text, _ = p.ContentChanges[0]["text"].(string)
		}
	}
	return p.TextDocument.URI, p.TextDocument.Version, text
}

func fakePublish(ctx context.Context, conn jsonrpc2.Conn, mode string, u protocol.DocumentURI, version int32, text string) {
	var cfg []any
	if _, err := conn.Call(ctx, protocol.MethodWorkspaceConfiguration, &protocol.ConfigurationParams{Items: []protocol.ConfigurationItem{{Section: "fake"}}}, &cfg); err != nil || len(cfg) != 1 {
		text = fmt.Sprintf("ERR: workspace/configuration answered %v, %v", cfg, err)
	}
	publish := func(v int32, d []protocol.Diagnostic) {
		if mode == "noversion" {
			v = 0
		}
		_ = conn.Notify(ctx, protocol.MethodTextDocumentPublishDiagnostics, &protocol.PublishDiagnosticsParams{URI: u, Version: uint32(v), Diagnostics: d}) // #nosec G115 -- test versions are small
	}
	if version > 1 && mode != "noversion" {
		publish(version-1, []protocol.Diagnostic{{Severity: protocol.DiagnosticSeverityError, Message: "stale"}})
		time.Sleep(20 * time.Millisecond)
	}
	d := []protocol.Diagnostic{}
	for i, line := range strings.Split(text, "\n") {
		for _, k := range []struct {
			word string
			sev  protocol.DiagnosticSeverity
		}{{"ERR", protocol.DiagnosticSeverityError}, {"WARN", protocol.DiagnosticSeverityWarning}} {
			if c := strings.Index(line, k.word); c >= 0 {
				pos := protocol.Position{Line: uint32(i), Character: uint32(len([]rune(line[:c])))} // #nosec G115 -- small test files
				d = append(d, protocol.Diagnostic{Range: protocol.Range{Start: pos, End: pos}, Severity: k.sev, Message: "fake " + strings.ToLower(k.word) + "\nsecond line"})
			}
		}
	}
	publish(version, d)
}

type stdio struct{}

func (stdio) Read(p []byte) (int, error)  { return os.Stdin.Read(p) }
func (stdio) Write(p []byte) (int, error) { return os.Stdout.Write(p) }
func (stdio) Close() error                { return nil }

var _ io.ReadWriteCloser = stdio{}
