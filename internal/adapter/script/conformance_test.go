package script

import (
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/protocol"
)

// TestConformance runs the adapter conformance suite on a script agent
// and checks its row of the table in docs/adapters.md.
func TestConformance(t *testing.T) {
	script := writeScript(t, `prompt=$(cat)
case "$prompt" in
hang*) echo started; sleep 30 ;;
*) printf 'input=%s: %s\n' "$FERRY_INPUT_TYPE" "$prompt" ;;
esac
`)
	a, err := New(Config{Command: []string{script}})
	if err != nil {
		t.Fatal(err)
	}
	f := adaptertest.Fixture{
		Name:    "script",
		Adapter: a,
		Answer:  "hello there",
		Hang:    "hang on",
		Effects: map[string]adaptertest.Effect{
			// Piped input is material the script gets on standard input,
			// and FERRY_INPUT_TYPE says so.
			protocol.InputPipedStdin: func(t *testing.T, s adapter.Session) {
				o := adaptertest.RunTurn(t, s, adaptertest.Request("line one\nline two", protocol.InputPipedStdin))
				if got := o.Text(); got != "input=piped_stdin: line one\nline two\n" {
					t.Errorf("script output %q", got)
				}
			},
			protocol.InputText: func(t *testing.T, s adapter.Session) {
				o := adaptertest.RunTurn(t, s, adaptertest.Request("do it", protocol.InputText))
				if got := o.Text(); !strings.HasPrefix(got, "input=text: do it") {
					t.Errorf("script output %q", got)
				}
			},
		},
	}
	adaptertest.CheckTable(t, f.Name, adaptertest.Run(t, f))
}
