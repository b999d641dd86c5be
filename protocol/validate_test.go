package protocol_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/protocol"
)

// mutate loads the golden message of msgType as generic JSON, lets edit
// change it and returns the bytes.
func mutate(t *testing.T, msgType string, edit func(env, payload map[string]any)) []byte {
	t.Helper()
	var env map[string]any
	if err := json.Unmarshal(readGolden(t, msgType), &env); err != nil {
		t.Fatal(err)
	}
	p, _ := env["payload"].(map[string]any)
	edit(env, p)
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func at(m map[string]any, keys ...any) map[string]any {
	var cur any = m
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			cur = cur.(map[string]any)[k]
		case int:
			cur = cur.([]any)[k]
		}
	}
	return cur.(map[string]any)
}

func TestValidationErrors(t *testing.T) {
	huge := `{"type":"agent.text.delta","message_id":"` + protocol.NewID() + `","session_id":"s","payload":{"turn_id":"t","delta":"` + strings.Repeat("a", protocol.MaxMessageBytes) + `"}}`
	cases := []struct {
		name  string
		input []byte
		code  string
		field string
	}{
		{"not json", []byte(`{"type":`), protocol.CodeMalformedJSON, ""},
		{"garbage", []byte("\x00\xff"), protocol.CodeMalformedJSON, ""},
		{"array not object", []byte(`[1,2]`), protocol.CodeMalformedJSON, ""},
		{"two values", []byte(`{} {}`), protocol.CodeMalformedJSON, ""},
		{"empty input", []byte(``), protocol.CodeMalformedJSON, ""},
		{"oversized", []byte(huge), protocol.CodeMessageTooLarge, ""},
		{"missing type", []byte(`{"message_id":"` + protocol.NewID() + `","payload":{}}`), protocol.CodeMissingField, "type"},
		{"type not string", []byte(`{"type":7,"payload":{}}`), protocol.CodeWrongType, "type"},
		{"unknown type", []byte(`{"type":"control.self.destruct","message_id":"` + protocol.NewID() + `","payload":{}}`), protocol.CodeUnknownType, "type"},
		{"missing message_id", mutate(t, "control.prompt.cancel", func(e, _ map[string]any) { delete(e, "message_id") }), protocol.CodeMissingField, "message_id"},
		{"message_id not uuid", mutate(t, "control.prompt.cancel", func(e, _ map[string]any) { e["message_id"] = "42" }), protocol.CodeInvalidValue, "message_id"},
		{"parent_id not uuid", mutate(t, "error", func(e, _ map[string]any) { e["parent_id"] = "nope" }), protocol.CodeInvalidValue, "parent_id"},
		{"missing session_id", mutate(t, "control.prompt.request", func(e, _ map[string]any) { delete(e, "session_id") }), protocol.CodeMissingField, "session_id"},
		{"candidates need parent_id", mutate(t, "session.file.candidates", func(e, _ map[string]any) { delete(e, "parent_id") }), protocol.CodeMissingField, "parent_id"},
		{"seq negative", mutate(t, "agent.text.delta", func(e, _ map[string]any) { e["seq"] = -1 }), protocol.CodeInvalidValue, "seq"},
		{"seq string", mutate(t, "agent.text.delta", func(e, _ map[string]any) { e["seq"] = "41" }), protocol.CodeWrongType, "seq"},
		{"missing payload", mutate(t, "control.prompt.cancel", func(e, _ map[string]any) { delete(e, "payload") }), protocol.CodeMissingField, "payload"},
		{"payload not object", mutate(t, "control.prompt.cancel", func(e, _ map[string]any) { e["payload"] = "x" }), protocol.CodeWrongType, "payload"},
		{"null payload", mutate(t, "control.prompt.cancel", func(e, _ map[string]any) { e["payload"] = nil }), protocol.CodeMissingField, "payload"},
		{"missing prompt_text", mutate(t, "control.prompt.request", func(_, p map[string]any) { delete(p, "prompt_text") }), protocol.CodeMissingField, "payload.prompt_text"},
		{"empty prompt_text", mutate(t, "control.prompt.request", func(_, p map[string]any) { p["prompt_text"] = "" }), protocol.CodeInvalidValue, "payload.prompt_text"},
		{"prompt_text number", mutate(t, "control.prompt.request", func(_, p map[string]any) { p["prompt_text"] = 3 }), protocol.CodeWrongType, "payload.prompt_text"},
		{"bad input_type", mutate(t, "control.prompt.request", func(_, p map[string]any) { p["input_type"] = "voice" }), protocol.CodeInvalidValue, "payload.input_type"},
		{"bad intent", mutate(t, "control.prompt.request", func(_, p map[string]any) { at(p, "context_files", 0)["intent"] = "delete" }), protocol.CodeInvalidValue, "payload.context_files[0].intent"},
		{"context file without url", mutate(t, "control.prompt.request", func(_, p map[string]any) { delete(at(p, "context_files", 0), "file_url") }), protocol.CodeMissingField, "payload.context_files[0].file_url"},
		{"ref without workspace path", mutate(t, "control.prompt.request", func(_, p map[string]any) { delete(at(p, "file_references", 0), "workspace_relative_path") }), protocol.CodeMissingField, "payload.file_references[0].workspace_relative_path"},
		{"ref_id with bad chars", mutate(t, "control.prompt.request", func(_, p map[string]any) { at(p, "file_references", 0)["ref_id"] = "ref|0" }), protocol.CodeInvalidValue, "payload.file_references[0].ref_id"},
		{"duplicate ref_id", mutate(t, "control.prompt.request", func(_, p map[string]any) {
			refs := p["file_references"].([]any)
			p["file_references"] = append(refs, refs[0])
		}), protocol.CodeInvalidValue, "payload.file_references[1].ref_id"},
		{"negative size", mutate(t, "control.prompt.request", func(_, p map[string]any) { at(p, "file_references", 0)["size_bytes"] = -5 }), protocol.CodeInvalidValue, "payload.file_references[0].size_bytes"},
		{"fractional size", mutate(t, "control.prompt.request", func(_, p map[string]any) { at(p, "file_references", 0)["size_bytes"] = 1.5 }), protocol.CodeWrongType, "payload.file_references[0].size_bytes"},
		{"bad output_format", mutate(t, "control.prompt.request", func(_, p map[string]any) { at(p, "config_overrides")["output_format"] = "xml" }), protocol.CodeInvalidValue, "payload.config_overrides.output_format"},
		{"json_schema not object", mutate(t, "control.prompt.request", func(_, p map[string]any) { at(p, "config_overrides")["json_schema"] = "{}" }), protocol.CodeWrongType, "payload.config_overrides.json_schema"},
		{"max_turns zero", mutate(t, "control.prompt.request", func(_, p map[string]any) { at(p, "config_overrides")["max_turns"] = 0 }), protocol.CodeInvalidValue, "payload.config_overrides.max_turns"},
		{"max_turns huge", mutate(t, "control.prompt.request", func(_, p map[string]any) {
			at(p, "config_overrides")["max_turns"] = json.Number("99999999999999999999")
		}), protocol.CodeInvalidValue, "payload.config_overrides.max_turns"},
		{"allowed_tools not array", mutate(t, "control.prompt.request", func(_, p map[string]any) { at(p, "config_overrides")["allowed_tools"] = "Read" }), protocol.CodeWrongType, "payload.config_overrides.allowed_tools"},
		{"allowed_tools item number", mutate(t, "control.prompt.request", func(_, p map[string]any) { at(p, "config_overrides")["allowed_tools"] = []any{"Read", 5} }), protocol.CodeWrongType, "payload.config_overrides.allowed_tools[1]"},
		{"cancel without target", mutate(t, "control.prompt.cancel", func(_, p map[string]any) { delete(p, "target_turn_id") }), protocol.CodeMissingField, "payload.target_turn_id"},
		{"bad cancel reason", mutate(t, "control.prompt.cancel", func(_, p map[string]any) { p["reason"] = "bored" }), protocol.CodeInvalidValue, "payload.reason"},
		{"selected_value number", mutate(t, "control.interaction.response", func(_, p map[string]any) { p["selected_value"] = 1 }), protocol.CodeWrongType, "payload.selected_value"},
		{"selected_value array of numbers", mutate(t, "control.interaction.response", func(_, p map[string]any) { p["selected_value"] = []any{1} }), protocol.CodeWrongType, "payload.selected_value"},
		{"selected_value missing", mutate(t, "control.interaction.response", func(_, p map[string]any) { delete(p, "selected_value") }), protocol.CodeMissingField, "payload.selected_value"},
		{"timeout without id", mutate(t, "control.interaction.timeout", func(_, p map[string]any) { p["interaction_id"] = "" }), protocol.CodeInvalidValue, "payload.interaction_id"},
		{"ratio above 1", mutate(t, "control.session.compact", func(_, p map[string]any) { p["target_token_ratio"] = 1.5 }), protocol.CodeInvalidValue, "payload.target_token_ratio"},
		{"ratio string", mutate(t, "control.session.compact", func(_, p map[string]any) { p["target_token_ratio"] = "0.5" }), protocol.CodeWrongType, "payload.target_token_ratio"},
		{"bad mode", mutate(t, "control.mode.switch", func(_, p map[string]any) { p["mode"] = "yolo" }), protocol.CodeInvalidValue, "payload.mode"},
		{"mode config array", mutate(t, "control.mode.switch", func(_, p map[string]any) { p["config"] = []any{} }), protocol.CodeWrongType, "payload.config"},
		{"query_id not uuid", mutate(t, "control.file.search", func(_, p map[string]any) { p["query_id"] = "q1" }), protocol.CodeInvalidValue, "payload.query_id"},
		// §16.1.1: query_id is required and a UUID v4.
		{"query_id empty", mutate(t, "control.file.search", func(_, p map[string]any) { p["query_id"] = "" }), protocol.CodeInvalidValue, "payload.query_id"},
		{"query_id missing", mutate(t, "control.file.search", func(_, p map[string]any) { delete(p, "query_id") }), protocol.CodeMissingField, "payload.query_id"},
		{"query_id uuid v1", mutate(t, "control.file.search", func(_, p map[string]any) { p["query_id"] = "6ba7b810-9dad-11d1-80b4-00c04fd430c8" }), protocol.CodeInvalidValue, "payload.query_id"},
		{"query_id nil uuid", mutate(t, "control.file.search", func(_, p map[string]any) { p["query_id"] = "00000000-0000-0000-0000-000000000000" }), protocol.CodeInvalidValue, "payload.query_id"},
		{"query_id v4 with wrong variant", mutate(t, "control.file.search", func(_, p map[string]any) { p["query_id"] = "45add917-9fcb-494a-c3d5-be59e2a96301" }), protocol.CodeInvalidValue, "payload.query_id"},
		{"search cancel empty id", mutate(t, "control.file.search.cancel", func(_, p map[string]any) { p["query_id"] = "" }), protocol.CodeInvalidValue, "payload.query_id"},
		{"candidates empty id", mutate(t, "session.file.candidates", func(_, p map[string]any) { p["query_id"] = "" }), protocol.CodeInvalidValue, "payload.query_id"},
		{"query missing", mutate(t, "control.file.search", func(_, p map[string]any) { delete(p, "query") }), protocol.CodeMissingField, "payload.query"},
		{"bad scope", mutate(t, "control.file.search", func(_, p map[string]any) { p["scope"] = "universe" }), protocol.CodeInvalidValue, "payload.scope"},
		{"max_results zero", mutate(t, "control.file.search", func(_, p map[string]any) { p["max_results"] = 0 }), protocol.CodeInvalidValue, "payload.max_results"},
		{"max_results float", mutate(t, "control.file.search", func(_, p map[string]any) { p["max_results"] = 2.5 }), protocol.CodeWrongType, "payload.max_results"},
		{"extensions not array", mutate(t, "control.file.search", func(_, p map[string]any) { at(p, "filters")["extensions"] = ".ts" }), protocol.CodeWrongType, "payload.filters.extensions"},
		{"search cancel without id", mutate(t, "control.file.search.cancel", func(_, p map[string]any) { delete(p, "query_id") }), protocol.CodeMissingField, "payload.query_id"},
		{"candidates missing truncated", mutate(t, "session.file.candidates", func(_, p map[string]any) { delete(p, "truncated") }), protocol.CodeMissingField, "payload.truncated"},
		{"truncated string", mutate(t, "session.file.candidates", func(_, p map[string]any) { p["truncated"] = "false" }), protocol.CodeWrongType, "payload.truncated"},
		{"score above 1", mutate(t, "session.file.candidates", func(_, p map[string]any) { at(p, "candidates", 0)["match_score"] = 1.2 }), protocol.CodeInvalidValue, "payload.candidates[0].match_score"},
		{"empty range", mutate(t, "session.file.candidates", func(_, p map[string]any) { at(p, "candidates", 0, "match_ranges", 0)["end"] = 4 }), protocol.CodeInvalidValue, "payload.candidates[0].match_ranges[0]"},
		{"range missing start", mutate(t, "session.file.candidates", func(_, p map[string]any) { delete(at(p, "candidates", 0, "match_ranges", 0), "start") }), protocol.CodeMissingField, "payload.candidates[0].match_ranges[0].start"},
		{"bad modified_at", mutate(t, "session.file.candidates", func(_, p map[string]any) { at(p, "candidates", 0)["modified_at"] = "yesterday" }), protocol.CodeInvalidValue, "payload.candidates[0].modified_at"},
		{"too many candidates", mutate(t, "session.file.candidates", func(_, p map[string]any) {
			c := at(p, "candidates", 0)
			list := make([]any, 51)
			for i := range list {
				list[i] = c
			}
			p["candidates"] = list
		}), protocol.CodeInvalidValue, "payload.candidates"},
		{"capabilities unknown message", mutate(t, "session.capabilities", func(_, p map[string]any) { p["messages"] = []any{"control.nope"} }), protocol.CodeInvalidValue, "payload.messages[0]"},
		{"capabilities bad encoding", mutate(t, "session.capabilities", func(_, p map[string]any) { at(p, "file_references")["position_encoding"] = "latin1" }), protocol.CodeInvalidValue, "payload.file_references.position_encoding"},
		{"capabilities bad scope", mutate(t, "session.capabilities", func(_, p map[string]any) { at(p, "file_references")["search_scopes"] = []any{"galaxy"} }), protocol.CodeInvalidValue, "payload.file_references.search_scopes[0]"},
		{"capabilities bad mode", mutate(t, "session.capabilities", func(_, p map[string]any) { at(p, "adapters", 0)["modes"] = []any{"turbo"} }), protocol.CodeInvalidValue, "payload.adapters[0].modes[0]"},
		{"capabilities bad text format", mutate(t, "session.capabilities", func(_, p map[string]any) { at(p, "adapters", 0)["text_format"] = "html" }), protocol.CodeInvalidValue, "payload.adapters[0].text_format"},
		{"done without is_cancelled", mutate(t, "agent.text.done", func(_, p map[string]any) { delete(p, "is_cancelled") }), protocol.CodeMissingField, "payload.is_cancelled"},
		{"tool status unknown", mutate(t, "agent.tool.finished", func(_, p map[string]any) { p["status"] = "meh" }), protocol.CodeInvalidValue, "payload.status"},
		{"diff header lies", mutate(t, "agent.tool.finished", func(_, p map[string]any) { at(p, "diff", "hunks", 0)["new_lines"] = 7 }), protocol.CodeInvalidValue, "payload.diff.hunks[0]"},
		{"diff bad op", mutate(t, "agent.tool.finished", func(_, p map[string]any) { at(p, "diff", "hunks", 0, "lines", 0)["op"] = "+" }), protocol.CodeInvalidValue, "payload.diff.hunks[0].lines[0].op"},
		{"permission without options", mutate(t, "agent.interaction.request", func(_, p map[string]any) { delete(p, "options") }), protocol.CodeMissingField, "payload.options"},
		{"repeated option", mutate(t, "agent.interaction.request", func(_, p map[string]any) {
			p["options"] = []any{at(p, "options", 0), at(p, "options", 0)}
		}), protocol.CodeInvalidValue, "payload.options[1].value"},
		{"negative timeout", mutate(t, "agent.interaction.request", func(_, p map[string]any) { p["timeout_ms"] = -1 }), protocol.CodeInvalidValue, "payload.timeout_ms"},
		{"bad interaction kind", mutate(t, "agent.interaction.request", func(_, p map[string]any) { p["kind"] = "captcha" }), protocol.CodeInvalidValue, "payload.kind"},
		{"bad outcome", mutate(t, "agent.interaction.resolved", func(_, p map[string]any) { p["outcome"] = "ignored" }), protocol.CodeInvalidValue, "payload.outcome"},
		{"artifact without path", mutate(t, "agent.artifact", func(_, p map[string]any) { delete(p, "path") }), protocol.CodeMissingField, "payload.path"},
		{"artifact absolute path", mutate(t, "agent.artifact", func(_, p map[string]any) { p["path"] = "/etc/passwd" }), protocol.CodeInvalidValue, "payload.path"},
		{"artifact dotdot path", mutate(t, "agent.artifact", func(_, p map[string]any) { p["path"] = "out/../../etc/passwd" }), protocol.CodeInvalidValue, "payload.path"},
		{"artifact backslash path", mutate(t, "agent.artifact", func(_, p map[string]any) { p["path"] = `out\\report.csv` }), protocol.CodeInvalidValue, "payload.path"},
		{"artifact drive path", mutate(t, "agent.artifact", func(_, p map[string]any) { p["path"] = "C:report.csv" }), protocol.CodeInvalidValue, "payload.path"},
		{"artifact empty component", mutate(t, "agent.artifact", func(_, p map[string]any) { p["path"] = "out//report.csv" }), protocol.CodeInvalidValue, "payload.path"},
		{"artifact name with separator", mutate(t, "agent.artifact", func(_, p map[string]any) { p["file_name"] = "a/b.csv" }), protocol.CodeInvalidValue, "payload.file_name"},
		{"artifact negative size", mutate(t, "agent.artifact", func(_, p map[string]any) { p["size"] = -1 }), protocol.CodeInvalidValue, "payload.size"},
		{"artifact bad id", mutate(t, "agent.artifact", func(_, p map[string]any) { p["artifact_id"] = "../x" }), protocol.CodeInvalidValue, "payload.artifact_id"},
		{"negative tokens", mutate(t, "agent.usage", func(_, p map[string]any) { p["input_tokens"] = -3 }), protocol.CodeInvalidValue, "payload.input_tokens"},
		{"agent error without code", mutate(t, "agent.error", func(_, p map[string]any) { delete(p, "code") }), protocol.CodeMissingField, "payload.code"},
		{"prompt without segments", mutate(t, "ui.prompt", func(_, p map[string]any) { p["segments"] = []any{} }), protocol.CodeInvalidValue, "payload.segments"},
		{"bad segment kind", mutate(t, "ui.prompt", func(_, p map[string]any) { at(p, "segments", 0)["kind"] = "token" }), protocol.CodeInvalidValue, "payload.segments[0].kind"},
		{"file segment without file", mutate(t, "ui.prompt", func(_, p map[string]any) { delete(at(p, "segments", 1), "file") }), protocol.CodeMissingField, "payload.segments[1].file"},
		{"file segment without path", mutate(t, "ui.prompt", func(_, p map[string]any) { delete(at(p, "segments", 1, "file"), "path") }), protocol.CodeMissingField, "payload.segments[1].file.path"},
		{"text segment with file", mutate(t, "ui.prompt", func(_, p map[string]any) { at(p, "segments", 0)["file"] = map[string]any{"path": "x"} }), protocol.CodeInvalidValue, "payload.segments[0].file"},
		{"invalid utf-8", []byte("{\"type\":\"agent.mode.changed\",\"message_id\":\"" + protocol.NewID() + "\",\"session_id\":\"s\",\"payload\":{\"mode\":\"plan\"},\"epoch\":\"\xff\"}"), protocol.CodeMalformedJSON, ""},
		{"error without code", mutate(t, "error", func(_, p map[string]any) { delete(p, "code") }), protocol.CodeMissingField, "payload.code"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := protocol.Decode(c.input)
			if err == nil {
				t.Fatalf("decoded %s, want error %s", m.Type, c.code)
			}
			var pe *protocol.Error
			if !errors.As(err, &pe) {
				t.Fatalf("error is %T, want *protocol.Error", err)
			}
			if pe.Code != c.code || pe.Field != c.field {
				t.Fatalf("got %s at %q (%s), want %s at %q", pe.Code, pe.Field, pe.Message, c.code, c.field)
			}
			if _, documented := protocol.ErrorCodes[pe.Code]; !documented {
				t.Fatalf("code %q is not in ErrorCodes", pe.Code)
			}
			if pe.Message == "" || len(pe.Message) > 300 {
				t.Fatalf("message must say what is wrong, briefly: %q", pe.Message)
			}
			if !errors.Is(err, &protocol.Error{Code: c.code}) {
				t.Fatal("errors.Is does not match the code")
			}
		})
	}
}

func TestUnknownFieldsTolerated(t *testing.T) {
	raw := mutate(t, "control.file.search", func(e, p map[string]any) {
		e["trace"] = "abc"
		p["future_option"] = map[string]any{"x": 1}
		at(p, "filters")["case_sensitive"] = true
	})
	if _, err := protocol.Decode(raw); err != nil {
		t.Fatalf("unknown fields must be tolerated: %v", err)
	}
}

func TestDefaults(t *testing.T) {
	id := protocol.NewID()
	m, err := protocol.Decode([]byte(`{"type":"control.file.search","message_id":"` + id + `","session_id":"s","payload":{"query_id":"` + protocol.NewID() + `","query":""}}`))
	if err != nil {
		t.Fatal(err)
	}
	fs := m.Payload.(*protocol.FileSearch)
	if fs.Scope != protocol.ScopeWorkspace || fs.MaxResults == nil || *fs.MaxResults != 20 {
		t.Fatalf("defaults not applied: scope %q max %v", fs.Scope, fs.MaxResults)
	}
	m, err = protocol.Decode(mutate(t, "control.file.search", func(_, p map[string]any) { p["max_results"] = 500 }))
	if err != nil {
		t.Fatal(err)
	}
	if got := *m.Payload.(*protocol.FileSearch).MaxResults; got != protocol.MaxResultsCap {
		t.Fatalf("max_results 500 gave %d, want the cap %d", got, protocol.MaxResultsCap)
	}
	m, err = protocol.Decode(mutate(t, "control.prompt.request", func(_, p map[string]any) { delete(p, "input_type") }))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Payload.(*protocol.PromptRequest).InputType; got != protocol.InputText {
		t.Fatalf("input_type default %q, want text", got)
	}
	m, err = protocol.Decode(mutate(t, "ui.prompt", func(_, p map[string]any) { delete(p, "input_type") }))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Payload.(*protocol.UIPrompt).InputType; got != protocol.InputText {
		t.Fatalf("ui.prompt input_type default %q, want text", got)
	}
	m, err = protocol.Decode(mutate(t, "agent.text.delta", func(_, p map[string]any) { delete(p, "channel") }))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Payload.(*protocol.TextDelta).Channel; got != "text" {
		t.Fatalf("channel default %q, want text", got)
	}
}

func TestDirections(t *testing.T) {
	cases := []struct {
		msgType string
		role    protocol.Role
		ok      bool
	}{
		{"control.prompt.request", protocol.RoleMaster, true},
		{"control.prompt.request", protocol.RoleUI, false},
		{"control.prompt.request", protocol.RoleClient, false},
		{"control.prompt.cancel", protocol.RoleUI, true},
		{"control.file.search", protocol.RoleUI, true},
		{"control.interaction.timeout", protocol.RoleUI, false},
		{"agent.text.delta", protocol.RoleClient, true},
		{"agent.text.delta", protocol.RoleUI, false},
		{"agent.interaction.resolved", protocol.RoleClient, false},
		{"session.file.candidates", protocol.RoleClient, true},
		{"ui.prompt", protocol.RoleUI, true},
		{"ui.prompt", protocol.RoleClient, false},
		{"error", protocol.RoleUI, true},
	}
	for _, c := range cases {
		_, err := protocol.DecodeFrom(c.role, readGolden(t, c.msgType))
		if c.ok && err != nil {
			t.Errorf("%s from %s: %v", c.msgType, c.role, err)
		}
		if !c.ok && !errors.Is(err, protocol.ErrWrongDirection) {
			t.Errorf("%s from %s: got %v, want wrong_direction", c.msgType, c.role, err)
		}
	}
}

func TestSelectedValueForms(t *testing.T) {
	for _, c := range []struct {
		in    string
		multi bool
		n     int
	}{{`"allow_once"`, false, 1}, {`["a","b"]`, true, 2}, {`[]`, true, 0}} {
		raw := mutate(t, "control.interaction.response", func(_, p map[string]any) { p["selected_value"] = json.RawMessage(c.in) })
		m, err := protocol.Decode(raw)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		sv := m.Payload.(*protocol.InteractionResponse).SelectedValue
		if sv.Multi != c.multi || len(sv.Values) != c.n {
			t.Fatalf("%s: got %+v", c.in, sv)
		}
		out, _ := json.Marshal(sv)
		if string(out) != c.in {
			t.Fatalf("%s re-encoded as %s", c.in, out)
		}
	}
}

func TestErrorMessageNeverEchoesMuch(t *testing.T) {
	long := strings.Repeat("z", 10000)
	_, err := protocol.Decode(mutate(t, "control.mode.switch", func(_, p map[string]any) { p["mode"] = long }))
	if err == nil || len(err.Error()) > 300 {
		t.Fatalf("error must name the field without echoing the value: %v", err)
	}
}

func TestNewAndReply(t *testing.T) {
	req, err := protocol.Decode(readGolden(t, "control.file.search"))
	if err != nil {
		t.Fatal(err)
	}
	fs := req.Payload.(*protocol.FileSearch)
	resp := req.Reply(protocol.TypeFileCandidates, &protocol.FileCandidates{QueryID: fs.QueryID, Candidates: []protocol.Candidate{}})
	b, err := protocol.Encode(resp)
	if err != nil {
		t.Fatal(err)
	}
	back, err := protocol.DecodeFrom(protocol.RoleClient, b)
	if err != nil {
		t.Fatalf("a reply built with New must decode: %v\n%s", err, b)
	}
	if back.ParentID != req.MessageID || back.SessionID != req.SessionID || back.MessageID == req.MessageID {
		t.Fatalf("reply envelope wrong: %+v", back)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("New with the wrong payload type must panic")
		}
	}()
	protocol.New(protocol.TypeFileCandidates, &protocol.FileSearch{})
}

func TestNewIDIsUUIDv4(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := protocol.NewID()
		if len(id) != 36 || id[14] != '4' || !strings.ContainsRune("89ab", rune(id[19])) {
			t.Fatalf("%q is not a UUID v4", id)
		}
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
	}
}

func TestDecodeRelayed(t *testing.T) {
	delta := protocol.New(protocol.TypeTextDelta, &protocol.TextDelta{TurnID: "t", Delta: "x"})
	delta.SessionID = "s"
	ui := protocol.New(protocol.TypeMachinesList, &protocol.MachinesList{})
	for _, c := range []struct {
		m    *protocol.Message
		want string
	}{{delta, ""}, {protocol.New(protocol.TypeAck, &protocol.Ack{Through: protocol.NewID()}), ""}, {ui, protocol.CodeWrongDirection}} {
		data, err := protocol.Encode(c.m)
		if err != nil {
			t.Fatal(err)
		}
		_, err = protocol.DecodeRelayed(data)
		var pe *protocol.Error
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.m.Type, err)
		case c.want != "" && (!errors.As(err, &pe) || pe.Code != c.want):
			t.Errorf("%s: got %v, want %s", c.m.Type, err, c.want)
		}
	}
}

// TestCaseVariantKeysRefused: encoding/json matches keys case-insensitively,
// so a key differing only in case would reach a field without its checks
// (found by FuzzDecode). Such keys are refused; other unknown keys stay
// tolerated.
func TestCaseVariantKeysRefused(t *testing.T) {
	for _, c := range []struct {
		name, data, field string
	}{
		{"payload", `{"type":"agent.text.done","message_id":"00000000-0000-4000-8000-000000000000","session_id":"s","payload":{"turn_id":"t","is_cancelled":false,"stop_reAson":"anything"}}`, "payload.stop_reAson"},
		{"envelope", `{"type":"agent.text.done","TYPE":"ui.prompt","message_id":"00000000-0000-4000-8000-000000000000","session_id":"s","payload":{"turn_id":"t","is_cancelled":false}}`, "TYPE"},
		// Several: always the first in byte order (found by FuzzDecode:
		// the field named followed the map's random order).
		{"several", `{"type":"agent.text.done","message_id":"00000000-0000-4000-8000-000000000000","session_id":"s","payload":{"Turn_id":"t","tUrn_id":"t","is_Cancelled":false,"Stop_reason":"x"}}`, "payload.Stop_reason"},
	} {
		for range 20 {
			_, err := protocol.Decode([]byte(c.data))
			var pe *protocol.Error
			if !errors.As(err, &pe) || pe.Code != protocol.CodeInvalidValue || pe.Field != c.field {
				t.Fatalf("%s: got %v, want invalid_value at %s", c.name, err, c.field)
			}
		}
	}
	ok := `{"type":"agent.text.done","message_id":"00000000-0000-4000-8000-000000000000","session_id":"s","extra":1,"payload":{"turn_id":"t","is_cancelled":false,"future_field":true}}`
	if _, err := protocol.Decode([]byte(ok)); err != nil {
		t.Errorf("unknown fields must stay tolerated: %v", err)
	}
}

// TestTrailingDataRefused: anything after the message's object is refused
// as malformed JSON, a stray '}' or ']' included (json.Decoder.More
// reports none before those; found by FuzzDecode).
func TestTrailingDataRefused(t *testing.T) {
	const msg = `{"type":"agent.text.done","message_id":"00000000-0000-4000-8000-000000000000","session_id":"s","payload":{"turn_id":"t","is_cancelled":false}}`
	if _, err := protocol.Decode([]byte(msg + " \n")); err != nil {
		t.Fatalf("trailing white space refused: %v", err)
	}
	for _, tail := range []string{"}", "]", " {}", "x", "0"} {
		_, err := protocol.Decode([]byte(msg + tail))
		var pe *protocol.Error
		if !errors.As(err, &pe) || pe.Code != protocol.CodeMalformedJSON {
			t.Errorf("%q after the message: got %v, want malformed_json", tail, err)
		}
	}
}
