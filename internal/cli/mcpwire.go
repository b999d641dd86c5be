package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// JSON-RPC 2.0 error codes ferry mcp answers itself.
const (
	rpcParseError     = -32700 // the line is not JSON
	rpcInvalidRequest = -32600 // JSON, but not a request object
	rpcMethodNotFound = -32601
	rpcInternalError  = -32603
)

// maxMCPLine bounds one line of ferry mcp's input, as the SDK's transport
// does (past it the SDK would end the connection).
const maxMCPLine = mcp.DefaultMaxLineLength

// mcpRefusal is a line of input ferry mcp answers itself, with an error,
// instead of handing it to the MCP server: the server's transport ends the
// connection on anything it cannot decode, dropping every request in
// flight, where JSON-RPC 2.0 wants an error answer and the server to carry
// on.
type mcpRefusal struct {
	id      any // the request's id when it could be read, else nil (null)
	code    int
	message string
}

// answer is the refusal's JSON-RPC response line.
func (r *mcpRefusal) answer() []byte {
	b, _ := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: r.id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{r.code, r.message}})
	return append(b, '\n')
}

// checkMCPLine decides whether one line of input (without its newline) may
// go to the MCP server: nil when it is a single JSON-RPC 2.0 message the
// server decodes, else the error to answer it with. A blank line is
// neither (skip it). Batches are refused: MCP removed them in 2025-06-18,
// and the SDK ends the connection on one once that version is agreed.
func checkMCPLine(line []byte) *mcpRefusal {
	if !json.Valid(line) {
		return &mcpRefusal{code: rpcParseError, message: "parse error: the line is not one JSON value"}
	}
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return &mcpRefusal{code: rpcInvalidRequest, message: "invalid request: batches (JSON arrays) are not supported; send one request per line"}
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(line, &obj) != nil || obj == nil {
		return &mcpRefusal{code: rpcInvalidRequest, message: "invalid request: not a JSON-RPC request object"}
	}
	id, idErr := rpcID(obj)
	bad := func(why string) *mcpRefusal {
		return &mcpRefusal{id: id, code: rpcInvalidRequest, message: "invalid request: " + why}
	}
	if idErr != "" {
		return bad(idErr)
	}
	var version string
	if json.Unmarshal(obj["jsonrpc"], &version) != nil || version != "2.0" {
		return bad(`"jsonrpc" must be "2.0"`)
	}
	if m, ok := obj["method"]; ok {
		var method string
		if json.Unmarshal(m, &method) != nil {
			return bad(`"method" must be a string`)
		}
		if p, ok := obj["params"]; ok {
			if p = bytes.TrimSpace(p); len(p) == 0 || (p[0] != '{' && p[0] != '[') {
				return bad(`"params" must be an object`)
			}
		}
	} else if id == nil {
		return bad(`a request needs "method"; an answer needs "id"`)
	}
	// The last word is the SDK's own decoder (it has limits of its own,
	// such as nesting depth), so nothing passed here can end the server.
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		return bad("the message cannot be decoded")
	}
	return nil
}

// rpcID reads a message's id: nil when absent, else a string or an
// integer; why is set when it is present but none of these (MCP forbids
// null ids too).
func rpcID(obj map[string]json.RawMessage) (id any, why string) {
	raw, ok := obj["id"]
	if !ok {
		return nil, ""
	}
	var v any
	_ = json.Unmarshal(raw, &v)
	switch v := v.(type) {
	case string:
		return v, ""
	case float64:
		if v == math.Trunc(v) && math.Abs(v) <= 1<<53 {
			return int64(v), ""
		}
	}
	return nil, `"id" must be a string or an integer`
}

// mcpRequestMethods are the request methods the SDK's server serves (its
// serverMethodInfos): any other method is not found, whatever the state.
var mcpRequestMethods = []string{
	"initialize", "ping", "server/discover", "completion/complete",
	"tools/list", "tools/call", "prompts/list", "prompts/get",
	"resources/list", "resources/templates/list", "resources/read",
	"resources/subscribe", "resources/unsubscribe", "subscriptions/listen",
	"logging/setLevel",
}

// fixErrorCode gives a code to an error answer the SDK sent without one
// (code 0, which JSON-RPC does not define): method not found (-32601) for
// a method the server does not serve, the SDK's refusal of a request sent
// before initialize (it sends code 0) becoming invalid request (-32600),
// anything else internal error (-32603). MCP defines no "not initialized"
// code, and -32002 is MCP's "resource not found", so it is not used here.
// It returns line unchanged when it is not such an answer.
func fixErrorCode(line []byte, method string, initialized bool) []byte {
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data,omitempty"`
		} `json:"error"`
	}
	if json.Unmarshal(line, &msg) != nil || msg.Error == nil || msg.Error.Code != 0 {
		return line
	}
	switch {
	case !slices.Contains(mcpRequestMethods, method):
		msg.Error.Code, msg.Error.Message = rpcMethodNotFound, fmt.Sprintf("method not found: %q", method)
	case !initialized:
		msg.Error.Code, msg.Error.Message = rpcInvalidRequest, msg.Error.Message+": send initialize first"
	default:
		msg.Error.Code = rpcInternalError
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return line
	}
	return append(b, '\n')
}
