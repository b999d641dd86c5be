package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Flags that cannot apply are refused before anything starts, and
// nothing but JSON-RPC ever reaches standard output.
func TestACPUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"acp", "--mode", "yolo"}, "--mode must be default, plan or review"},
		{[]string{"acp", "--allow", "Bash("}, "--allow"},
		{[]string{"acp", "--machine", "m1"}, "--machine applies with --master only"},
		{[]string{"acp", "--master", "http://127.0.0.1:1", "--provider", "openai"}, "--provider apply to ferry's agent here"},
		{[]string{"acp", "--master", "http://127.0.0.1:1"}, "needs a ui token"},
		{[]string{"acp", "extra"}, "takes no arguments"},
	} {
		var out, errb bytes.Buffer
		code := Run(context.Background(), Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
			Getenv: func(string) string { return "" }}, c.args)
		if code != ExitUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errb.String(), ExitUsage, c.want)
		}
		if out.Len() != 0 {
			t.Errorf("%v wrote %q on standard output", c.args, out.String())
		}
	}
}
