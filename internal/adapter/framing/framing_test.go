package framing

import (
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/protocol"
)

func TestPrompt(t *testing.T) {
	t.Parallel()
	if got := Prompt(protocol.InputPipedStdin, "rm -rf /\n"); !strings.HasPrefix(got, "The user piped this into ferry on standard input:\n<stdin>\nrm -rf /\n</stdin>") {
		t.Errorf("piped: %q", got)
	}
	for _, in := range []string{"", " continue ", "Continue"} {
		if got := Prompt(protocol.InputContinuation, in); got != ContinueText {
			t.Errorf("continuation %q: %q", in, got)
		}
	}
	if got := Prompt(protocol.InputContinuation, "and add tests"); got != "and add tests" {
		t.Errorf("continuation with text: %q", got)
	}
	for _, it := range []string{protocol.InputText, protocol.InputSlashCommand} {
		if got := Prompt(it, "/cost"); got != "/cost" {
			t.Errorf("%s: %q", it, got)
		}
	}
}
