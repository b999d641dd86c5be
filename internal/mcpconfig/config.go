// Package mcpconfig reads the MCP servers a session of ferry's agent may
// use: the workspace's .mcp.json (Claude Code's format) and the user's
// $XDG_CONFIG_HOME/ferry/mcp.json, and keeps the user's approvals of
// workspace files.
//
// Guarantees:
//
//   - Parse accepts {"mcpServers": {NAME: {"command","args","env","cwd"} |
//     {"type":"http","url","headers"}}} and nothing it cannot honour: bad
//     input is a *Error (errors.Is ErrBadConfig) with a Code and the file,
//     server and field it is about. A bad server entry leaves the others
//     usable; a file that is no such object yields no server. Servers come
//     sorted by name, so the same file always gives the same tool names.
//   - A workspace's .mcp.json is a repository's say: its servers are
//     started only once the user approved that exact content (Approvals,
//     keyed by the workspace's canonical path and the file's SHA-256; a
//     changed file is a new question). The user's own file is trusted.
//   - The approvals file is written 0600, atomically (a temporary file
//     renamed over it); a damaged one is an error and is never overwritten.
//   - ${VAR} and ${VAR:-default} are expanded (Expand) only after approval,
//     from the environment: what the user approves is the file's text.
package mcpconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"unicode"

	"github.com/ferry-dev/ferry/internal/mcpclient"
)

// File names.
const (
	// WorkspaceFile is the workspace's configuration, at its root.
	WorkspaceFile = ".mcp.json"
	// UserFile is the user's, in $XDG_CONFIG_HOME/ferry.
	UserFile = "mcp.json"
)

// Limits of a configuration file.
const (
	// MaxFileSize bounds a configuration file.
	MaxFileSize = 1 << 20
	// MaxServers bounds the servers of one file.
	MaxServers = 64
	// MaxName bounds a server's name.
	MaxName = 128
	// maxArgs bounds a server's arguments, env or headers entries.
	maxArgs = 256
)

// Codes of Error.
const (
	// CodeTooLarge: the file is over MaxFileSize.
	CodeTooLarge = "mcp_config_too_large"
	// CodeSyntax: the file is not valid JSON.
	CodeSyntax = "mcp_config_syntax"
	// CodeShape: the file is JSON but not {"mcpServers": {...}}.
	CodeShape = "mcp_config_shape"
	// CodeServer: one server's entry is wrong (the others are used).
	CodeServer = "mcp_config_server"
	// CodeUnsupported: an entry asks for what ferry does not do (an SSE
	// server).
	CodeUnsupported = "mcp_config_unsupported"
	// CodeEnv: a ${VAR} the entry uses is not set.
	CodeEnv = "mcp_config_env"
	// CodeApprovals: the approvals file cannot be read or written.
	CodeApprovals = "mcp_approvals"
)

// ErrBadConfig is what every *Error is (errors.Is).
var ErrBadConfig = errors.New("bad MCP configuration")

// Error is a coded problem of a configuration file or one of its servers.
type Error struct {
	Code string
	// Path is the file; Server the entry's name ("" : the whole file);
	// Field the entry's field ("" : the whole entry).
	Path, Server, Field string
	// Reason says what is wrong, plainly.
	Reason string
	Err    error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Server != "" {
		fmt.Fprintf(&b, ": server %q", e.Server)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": %q", e.Field)
	}
	fmt.Fprintf(&b, ": %s [%s]", e.Reason, e.Code)
	return b.String()
}

// Is makes every *Error match ErrBadConfig.
func (e *Error) Is(target error) bool { return target == ErrBadConfig }
func (e *Error) Unwrap() error        { return e.Err }

// entry is one server as the file spells it.
type entry struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	Cwd     string            `json:"cwd"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// Parse reads a configuration file's content; path names it in errors.
// It returns the usable servers and, joined, a *Error for each problem.
func Parse(data []byte, path string) ([]mcpclient.Server, error) {
	fileErr := func(code, reason string, err error) error {
		return &Error{Code: code, Path: path, Reason: reason, Err: err}
	}
	if len(data) > MaxFileSize {
		return nil, fileErr(CodeTooLarge, fmt.Sprintf("the file is %d KB, over the %d KB a configuration may have", len(data)>>10, MaxFileSize>>10), nil)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := position(data, se.Offset)
			return nil, fileErr(CodeSyntax, fmt.Sprintf("not valid JSON at line %d, column %d: %s", line, col, se.Error()), err)
		}
		if bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
			return nil, fileErr(CodeSyntax, "not valid JSON: "+err.Error(), err)
		}
		return nil, fileErr(CodeShape, `want a JSON object {"mcpServers": {...}}`, err)
	}
	if top == nil {
		return nil, fileErr(CodeShape, `want a JSON object {"mcpServers": {...}}, not null`, nil)
	}
	raw, ok := top["mcpServers"]
	if !ok {
		return nil, fileErr(CodeShape, `no "mcpServers" object: want {"mcpServers": {"NAME": {"command": …}}}`, nil)
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil || entries == nil {
		return nil, fileErr(CodeShape, `"mcpServers" must be an object of servers by name`, err)
	}
	if len(entries) > MaxServers {
		return nil, fileErr(CodeShape, fmt.Sprintf("%d servers, over the %d one file may have", len(entries), MaxServers), nil)
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	slices.Sort(names)
	var (
		out  []mcpclient.Server
		errs []error
	)
	for _, name := range names {
		s, err := parseEntry(path, name, entries[name])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

// parseEntry checks one server's entry.
func parseEntry(path, name string, raw json.RawMessage) (mcpclient.Server, error) {
	bad := func(field, format string, a ...any) error {
		return &Error{Code: CodeServer, Path: path, Server: shown(name), Field: field, Reason: fmt.Sprintf(format, a...)}
	}
	if why := checkName(name); why != "" {
		return mcpclient.Server{}, bad("", "bad server name: %s", why)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil || probe == nil {
		return mcpclient.Server{}, bad("", "the entry must be an object with a command or a url")
	}
	var e entry
	for field, v := range probe {
		var err error
		switch field {
		case "type", "command", "cwd", "url":
			var s string
			err = json.Unmarshal(v, &s)
			switch field {
			case "type":
				e.Type = s
			case "command":
				e.Command = s
			case "cwd":
				e.Cwd = s
			case "url":
				e.URL = s
			}
			if err != nil {
				return mcpclient.Server{}, bad(field, "must be a string")
			}
		case "args":
			if err = json.Unmarshal(v, &e.Args); err != nil {
				return mcpclient.Server{}, bad(field, "must be an array of strings")
			}
		case "env", "headers":
			var m map[string]string
			if err = json.Unmarshal(v, &m); err != nil {
				return mcpclient.Server{}, bad(field, "must be an object of string values")
			}
			if field == "env" {
				e.Env = m
			} else {
				e.Headers = m
			}
		}
	}
	if len(e.Args) > maxArgs || len(e.Env) > maxArgs || len(e.Headers) > maxArgs {
		return mcpclient.Server{}, bad("", "over %d args, env or headers entries", maxArgs)
	}
	for _, s := range append([]string{e.Command, e.URL, e.Cwd}, e.Args...) {
		if strings.ContainsRune(s, 0) {
			return mcpclient.Server{}, bad("", "a NUL byte in a value")
		}
	}
	for k, v := range e.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return mcpclient.Server{}, bad("env", "bad variable %q: a name without '=' or NUL, a value without NUL", shown(k))
		}
	}
	for k, v := range e.Headers {
		if !validHeaderName(k) || strings.ContainsAny(v, "\r\n\x00") {
			return mcpclient.Server{}, bad("headers", "bad header %q: a token name, a value on one line", shown(k))
		}
	}
	s := mcpclient.Server{Name: name}
	switch e.Type {
	case "", "stdio":
		if e.URL != "" && e.Command == "" && e.Type == "" {
			return mcpclient.Server{}, bad("type", `a server with a url needs "type": "http" (streamable HTTP)`)
		}
		if e.Command == "" {
			return mcpclient.Server{}, bad("command", "missing: a stdio server needs the program to start")
		}
		if e.URL != "" || len(e.Headers) > 0 {
			return mcpclient.Server{}, bad("url", "a stdio server (command) takes no url or headers")
		}
		s.Command, s.Args, s.Env, s.Cwd = e.Command, e.Args, e.Env, e.Cwd
	case "http", "streamable-http", "streamableHttp":
		if e.Command != "" || len(e.Args) > 0 || len(e.Env) > 0 || e.Cwd != "" {
			return mcpclient.Server{}, bad("command", "an http server (url) takes no command, args, env or cwd")
		}
		if why := checkURL(e.URL); why != "" {
			return mcpclient.Server{}, bad("url", "%s", why)
		}
		s.URL, s.Headers = e.URL, e.Headers
	case "sse":
		return mcpclient.Server{}, &Error{Code: CodeUnsupported, Path: path, Server: shown(name), Field: "type",
			Reason: `ferry speaks streamable HTTP, not the older SSE transport; use "type": "http" with the server's streamable endpoint`}
	default:
		return mcpclient.Server{}, bad("type", "unknown type %q: use stdio (with a command) or http (with a url)", shown(e.Type))
	}
	return s, nil
}

// checkName says what is wrong with a server's name ("" : nothing).
func checkName(name string) string {
	switch {
	case name == "":
		return "it is empty"
	case len(name) > MaxName:
		return fmt.Sprintf("over %d bytes", MaxName)
	}
	for _, r := range name {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return "it has a control character or invalid UTF-8"
		}
	}
	return ""
}

// checkURL says what is wrong with an http server's URL ("" : nothing).
// ${VAR} references are checked after expansion (mcpclient does).
func checkURL(raw string) string {
	if raw == "" {
		return "missing: an http server needs its url"
	}
	if strings.Contains(raw, "${") {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("%q is no http:// or https:// URL with a host", shown(raw))
	}
	return ""
}

func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for i := range len(k) {
		c := k[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// shown cuts a value quoted in an error.
func shown(s string) string {
	if len(s) <= 80 {
		return s
	}
	cut := 80
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// position is the 1-based line and column of byte offset off.
func position(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// Expand expands ${VAR} and ${VAR:-default} in servers with getenv; a
// server whose variable is not set is left out with a CodeEnv *Error.
func Expand(servers []mcpclient.Server, path string, getenv func(string) string) ([]mcpclient.Server, error) {
	var (
		out  []mcpclient.Server
		errs []error
	)
	for _, s := range servers {
		x, err := mcpclient.Expand(s, getenv)
		if err != nil {
			errs = append(errs, &Error{Code: CodeEnv, Path: path, Server: shown(s.Name), Reason: err.Error(), Err: err})
			continue
		}
		out = append(out, x)
	}
	return out, errors.Join(errs...)
}

// Describe lists servers for the user, one Markdown line each: the name
// and the command line or URL, as the file has them.
func Describe(servers []mcpclient.Server) string {
	var b strings.Builder
	for _, s := range servers {
		what := s.URL
		if s.Command != "" {
			what = strings.Join(append([]string{s.Command}, s.Args...), " ")
		}
		var extra []string
		keys := slices.Sorted(maps.Keys(s.Env))
		for _, k := range keys {
			extra = append(extra, k+"="+s.Env[k])
		}
		if s.Cwd != "" {
			extra = append(extra, "in "+s.Cwd)
		}
		fmt.Fprintf(&b, "- `%s`: `%s`", tick(shown(s.Name)), tick(cutRunes(what, 300)))
		if len(extra) > 0 {
			fmt.Fprintf(&b, " (`%s`)", tick(cutRunes(strings.Join(extra, " "), 300)))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// tick keeps a value inside its Markdown code span.
func tick(s string) string { return strings.NewReplacer("`", "'", "\n", " ", "\r", " ").Replace(s) }

func cutRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
