// Package mcpclient connects ferry's agent to MCP servers (stdio and
// streamable HTTP) and offers their tools to the model as
// mcp__SERVER__TOOL.
package mcpclient

// Server is one MCP server to connect to: a stdio server when Command is
// set, else a streamable-HTTP server at URL.
type Server struct {
	// Name is unique among a session's servers; its tools are offered as
	// mcp__NAME__TOOL.
	Name string `json:"name"`
	// Command, Args, Env and Cwd start a stdio server (Cwd "": the
	// session's workspace). Env adds to ferry's environment.
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	// URL and Headers reach a streamable-HTTP server.
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}
