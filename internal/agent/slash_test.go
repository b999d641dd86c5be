package agent_test

import (
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/internal/attachment"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/protocol"
)

// TestSlashCommandRefusesWhatItCannotUse: ferry's slash commands run
// without model turns, tools or files, so a slash_command prompt that
// carries config_overrides (bar output_format) or attached files is
// refused with one coded agent.error naming the field, and the command
// does not run; output_format alone is fine (ferry renders it).
func TestSlashCommandRefusesWhatItCannotUse(t *testing.T) {
	t.Parallel()
	one := 1
	for _, tc := range []struct {
		name  string
		o     *protocol.ConfigOverrides
		files []attachment.File
		field string
	}{
		{"max_turns", &protocol.ConfigOverrides{MaxTurns: &one}, nil, "payload.config_overrides.max_turns"},
		{"allowed_tools", &protocol.ConfigOverrides{AllowedTools: []string{"Read"}}, nil, "payload.config_overrides.allowed_tools"},
		{"denied_tools", &protocol.ConfigOverrides{DeniedTools: []string{"Bash"}}, nil, "payload.config_overrides.denied_tools"},
		{"json_schema", &protocol.ConfigOverrides{JSONSchema: []byte(`{"type":"object"}`)}, nil, "payload.config_overrides.json_schema"},
		{"context_files", nil, []attachment.File{{Name: "a.txt", MediaType: "text/plain", Data: []byte("a")}}, "payload.context_files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := fake.New(t)
			a, _ := fakeAgent(t, srv, fake.Anthropic, nil)
			turn := turnOf(protocol.InputSlashCommand, "/clear", tc.o)
			turn.Attachments = tc.files
			if tc.files != nil {
				turn.Request.ContextFiles = []protocol.ContextFile{{FileURL: "data:text/plain,a", FileName: "a.txt"}}
			}
			rec := newRecorder()
			res, err := a.Run(testCtx(t), turn, rec.emit)
			errs := rec.of(protocol.TypeAgentError)
			if err == nil || res.StopReason != agent.StopError || len(errs) != 1 {
				t.Fatalf("Run = %+v, %v with %d agent.error, want a refusal", res, err, len(errs))
			}
			if e := errs[0].(*protocol.AgentError); e.Code != protocol.CodeUnsupported || !strings.HasPrefix(e.Message, tc.field+":") {
				t.Fatalf("agent.error %+v, want unsupported naming %s", e, tc.field)
			}
			if len(rec.of(protocol.TypeTextDelta)) != 0 {
				t.Fatal("the refused command ran")
			}
		})
	}
	srv := fake.New(t)
	a, _ := fakeAgent(t, srv, fake.Anthropic, nil)
	res, err := a.Run(testCtx(t), turnOf(protocol.InputSlashCommand, "/help", &protocol.ConfigOverrides{OutputFormat: "json"}), newRecorder().emit)
	if err != nil || !strings.HasPrefix(res.Text, "Commands:") {
		t.Fatalf("/help with output_format: %+v, %v", res, err)
	}
}
