package mcpclient

import (
	"fmt"
	"strings"
)

// expandServer expands ${VAR} and ${VAR:-default} in cfg's command, args,
// env values, cwd, URL and header values with getenv, as Claude Code's
// .mcp.json does. A variable that is unset (empty) without a default is an
// error naming it: a server started with a hole in its arguments or a
// header fails in ways far harder to read.
func expandServer(cfg *Server, getenv func(string) string) error {
	var err error
	ex := func(s string) string {
		if err != nil {
			return s
		}
		var out string
		out, err = expand(s, getenv)
		return out
	}
	cfg.Command = ex(cfg.Command)
	cfg.Cwd = ex(cfg.Cwd)
	cfg.URL = ex(cfg.URL)
	args := make([]string, len(cfg.Args))
	for i, a := range cfg.Args {
		args[i] = ex(a)
	}
	cfg.Args = args
	cfg.Env = expandMap(cfg.Env, ex)
	cfg.Headers = expandMap(cfg.Headers, ex)
	return err
}

func expandMap(m map[string]string, ex func(string) string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = ex(v)
	}
	return out
}

// expand replaces each ${NAME} and ${NAME:-default} in s; "$" elsewhere is
// kept as it is.
func expand(s string, getenv func(string) string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("unclosed ${ in %q", s)
		}
		b.WriteString(s[:i])
		ref := s[i+2 : i+j]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !validVar(name) {
			return "", fmt.Errorf("bad variable name %q in ${%s}", name, ref)
		}
		v := getenv(name)
		switch {
		case v != "":
			b.WriteString(v)
		case hasDef:
			b.WriteString(def)
		default:
			return "", fmt.Errorf("environment variable %s is not set (use ${%s:-default} for a default)", name, name)
		}
		s = s[i+j+1:]
	}
}

func validVar(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		ok := r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z') || (i > 0 && r >= '0' && r <= '9')
		if !ok {
			return false
		}
	}
	return true
}

// Expand returns cfg with ${VAR} and ${VAR:-default} expanded by getenv in
// the fields Options.Getenv expands, for callers that expand some servers
// (a configuration file's) and not others (an editor's, given literally).
// Its error names the variable that is not set.
func Expand(cfg Server, getenv func(string) string) (Server, error) {
	if err := expandServer(&cfg, getenv); err != nil {
		return cfg, err
	}
	return cfg, nil
}
