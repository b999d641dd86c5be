package acp

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter/acp/acppeer"
	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/protocol"
)

// TestSlashCommandCarriesSettings: an ACP agent's slash command is one
// session/prompt like any other, so its settings hold as a text prompt's
// do: the attached files follow the command's text, denied_tools refuses
// the command's fs reads, and allowed_tools answers its permission
// requests without asking.
func TestSlashCommandCarriesSettings(t *testing.T) {
	t.Parallel()
	p := newPeer(t, acppeer.Script{})
	writeFile(t, p.ws, "secret.txt", "top secret\n")
	read := step{Request: &acppeer.Request{Method: "fs/read_text_file", Params: map[string]any{"sessionId": acppeer.SessionID, "path": filepath.Join(p.ws, "secret.txt")}}}
	ask := step{Request: &acppeer.Request{Method: "session/request_permission", Echo: true, Params: map[string]any{
		"sessionId": acppeer.SessionID,
		"toolCall": map[string]any{"toolCallId": "call_edit", "title": "Edit src/a.go", "kind": "edit",
			"rawInput": map[string]any{"file_path": filepath.Join(p.ws, "src", "a.go")}},
		"options": []any{
			map[string]any{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
			map[string]any{"optionId": "no", "name": "Reject", "kind": "reject_once"},
		},
	}}}
	p.setScript(t, acppeer.Script{Init: promptCaps(true, true), Turns: [][]step{{read, ask}}})
	s := p.open(t, "")
	tn := turn("/review the change")
	tn.Request.InputType = protocol.InputSlashCommand
	tn.Request.ConfigOverrides = &protocol.ConfigOverrides{DeniedTools: []string{"Read(secret.txt)"}, AllowedTools: []string{"Edit(src/**)"}}
	tn.Request.ContextFiles = []protocol.ContextFile{{FileURL: "data:text/plain,x", FileName: "note.txt"}}
	tn.Attachments = attachedFiles()[1:2] // the text note
	rec, res, err := run(t, s, tn)
	if err != nil || res.StopReason != protocol.StopEndTurn || len(rec.Errors()) > 0 {
		t.Fatalf("Run = %+v, %v, errors %+v", res, err, rec.Errors())
	}
	prompts := p.receivedMethod(t, "session/prompt")
	raw, _ := json.Marshal(prompts[0]["prompt"])
	blocks, _ := prompts[0]["prompt"].([]any)
	if first, _ := blocks[0].(map[string]any)["text"].(string); first != "/review the change" || !strings.Contains(string(raw), adaptertest.AttachedNote) {
		t.Fatalf("the agent got %s, want the command as typed and then the attached note", raw)
	}
	resp := p.responses(t)
	if len(resp) != 2 {
		t.Fatalf("responses %v", resp)
	}
	if code, _ := rpcCode(t, resp[0]); code != tools.CodeDenied {
		t.Errorf("the denied read got %v", resp[0])
	}
	if out, _ := json.Marshal(resp[1]["result"]); !strings.Contains(string(out), `"yes"`) {
		t.Errorf("the allowed edit got %v", resp[1])
	}
	for _, e := range rec.Events() {
		if e.Type == protocol.TypeInteractionRequest {
			t.Error("the allowed edit was asked about")
		}
	}
}
