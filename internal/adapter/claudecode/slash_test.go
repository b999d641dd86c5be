package claudecode

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/internal/attachment"
	"github.com/ferry-dev/ferry/protocol"
)

// TestSlashCommandSettings: a slash command is Claude Code's own, sent as
// typed, so its prompt settings are honoured the way a text prompt's are:
// max_turns, allowed_tools, denied_tools and json_schema become the CLI's
// flags for the command. Attached files are refused (unsupported on
// payload.context_files) before anything reaches the CLI: with content
// blocks Claude Code would not run the text as its command.
func TestSlashCommandSettings(t *testing.T) {
	t.Parallel()
	env := openFake(t, "echo", nil)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	withFiles := adaptertest.TextTurn("/review")
	withFiles.Request.InputType = protocol.InputSlashCommand
	withFiles.Request.ContextFiles = []protocol.ContextFile{{FileURL: "data:text/plain,a", FileName: "note.txt"}}
	withFiles.Attachments = []attachment.File{{Name: "note.txt", MediaType: "text/plain", Data: []byte("a")}}
	rec := newRecorder(t)
	res, err := env.sess.Run(ctx, withFiles, rec.emit)
	errs := rec.Errors()
	if err != nil || res.StopReason != protocol.StopError || len(errs) != 1 || errs[0].Code != protocol.CodeUnsupported ||
		!strings.HasPrefix(errs[0].Message, "payload.context_files:") {
		t.Fatalf("slash command with files: %+v, %v, errors %+v", res, err, errs)
	}
	if _, err := os.Stat(env.log); err == nil {
		t.Fatalf("the CLI started for a refused command: %q", fakeStarts(t, env.log))
	}

	turn := adaptertest.TextTurn("/review")
	turn.Request.InputType = protocol.InputSlashCommand
	two := 2
	turn.Request.ConfigOverrides = &protocol.ConfigOverrides{
		MaxTurns: &two, AllowedTools: []string{"Read"}, DeniedTools: []string{"WebFetch"}, JSONSchema: json.RawMessage(`{"type":"object"}`),
	}
	if _, err := env.sess.Run(ctx, turn, newRecorder(t).emit); err != nil {
		t.Fatal(err)
	}
	starts := fakeStarts(t, env.log)
	if len(starts) != 1 {
		t.Fatalf("starts %q", starts)
	}
	args := strings.Join(starts[0], " ")
	for _, want := range []string{"--max-turns 2", "--allowedTools=Read", "--disallowedTools=WebFetch", `--json-schema={"type":"object"}`} {
		if !strings.Contains(args, want) {
			t.Errorf("the command's CLI %q lacks %q", args, want)
		}
	}
	sent := lastUserLine(t, env.log)
	if !strings.Contains(sent, `"content":"/review"`) {
		t.Errorf("the CLI got %s, want the command as typed", sent)
	}
}
