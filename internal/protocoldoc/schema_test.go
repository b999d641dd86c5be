package protocoldoc_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sv "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ferry-dev/ferry/internal/protocoldoc"
	"github.com/ferry-dev/ferry/protocol"
)

var update = flag.Bool("update", false, "rewrite docs/schema from the Go types")

const (
	schemaDir = "../../docs/schema"
	goldenDir = "../../protocol/testdata/golden"
)

// TestSchemasFresh fails when docs/schema differs from what the Go types
// generate. Run `go test ./internal/protocoldoc -update` after changing a
// message type.
func TestSchemasFresh(t *testing.T) {
	got, err := protocoldoc.Generate("../..")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.MkdirAll(schemaDir, 0o755); err != nil {
			t.Fatal(err)
		}
		old, _ := filepath.Glob(filepath.Join(schemaDir, "*.json"))
		for _, f := range old {
			_ = os.Remove(f)
		}
		for name, b := range got {
			if err := os.WriteFile(filepath.Join(schemaDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join(schemaDir, "*.json"))
	if len(files) != len(got) {
		t.Fatalf("docs/schema has %d files, the protocol %d messages: run go test ./internal/protocoldoc -update", len(files), len(got))
	}
	for name, want := range got {
		have, err := os.ReadFile(filepath.Join(schemaDir, name))
		if err != nil || !bytes.Equal(have, want) {
			t.Errorf("docs/schema/%s is stale: run go test ./internal/protocoldoc -update", name)
		}
	}
}

func compile(t *testing.T) map[string]*sv.Schema {
	t.Helper()
	got, err := protocoldoc.Generate("")
	if err != nil {
		t.Fatal(err)
	}
	c := sv.NewCompiler()
	c.AssertFormat()
	out := map[string]*sv.Schema{}
	for name, b := range got {
		doc, err := sv.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		url := protocoldoc.BaseID + name
		if err := c.AddResource(url, doc); err != nil {
			t.Fatal(err)
		}
		s, err := c.Compile(url)
		if err != nil {
			t.Fatalf("%s does not compile: %v", name, err)
		}
		out[strings.TrimSuffix(name, ".json")] = s
	}
	return out
}

// TestGoldenMessagesMatchSchemas checks every golden message against its
// schema with an independent JSON Schema validator.
func TestGoldenMessagesMatchSchemas(t *testing.T) {
	schemas := compile(t)
	for _, info := range protocol.Messages() {
		raw, err := os.ReadFile(filepath.Join(goldenDir, info.Type+".json"))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := sv.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		if err := schemas[info.Type].Validate(doc); err != nil {
			t.Errorf("%s: golden message fails its schema: %v", info.Type, err)
		}
	}
}

// TestSchemaAndDecoderAgree mutates golden messages in ways both the schema
// and protocol.Decode must refuse; the two are generated from the same tags,
// so a disagreement means the tags are read differently.
func TestSchemaAndDecoderAgree(t *testing.T) {
	schemas := compile(t)
	cases := []struct {
		msgType string
		edit    func(env, p map[string]any)
	}{
		{"control.file.search", func(_, p map[string]any) { p["scope"] = "galaxy" }},
		{"control.file.search", func(_, p map[string]any) { p["max_results"] = 0 }},
		{"control.file.search", func(_, p map[string]any) { p["query_id"] = "not-a-uuid" }},
		{"control.file.search", func(_, p map[string]any) { p["query_id"] = "" }},
		{"control.file.search", func(_, p map[string]any) { p["query_id"] = "6ba7b810-9dad-11d1-80b4-00c04fd430c8" }},
		{"control.file.search.cancel", func(_, p map[string]any) { p["query_id"] = "" }},
		{"session.file.candidates", func(_, p map[string]any) { p["query_id"] = "" }},
		{"control.file.search", func(_, p map[string]any) { delete(p, "query") }},
		{"control.file.search", func(env, _ map[string]any) { delete(env, "session_id") }},
		{"control.prompt.request", func(_, p map[string]any) { p["input_type"] = "voice" }},
		{"control.prompt.request", func(_, p map[string]any) { p["prompt_text"] = "" }},
		{"control.prompt.request", func(_, p map[string]any) {
			p["file_references"].([]any)[0].(map[string]any)["ref_id"] = "a b"
		}},
		{"control.prompt.request", func(_, p map[string]any) { p["config_overrides"].(map[string]any)["json_schema"] = 3 }},
		{"control.session.compact", func(_, p map[string]any) { p["target_token_ratio"] = 2 }},
		{"control.interaction.response", func(_, p map[string]any) { p["selected_value"] = 7 }},
		{"session.file.candidates", func(env, _ map[string]any) { delete(env, "parent_id") }},
		{"session.file.candidates", func(_, p map[string]any) { p["truncated"] = "no" }},
		{"agent.text.done", func(_, p map[string]any) { delete(p, "is_cancelled") }},
		{"agent.tool.finished", func(_, p map[string]any) { p["status"] = "fine" }},
		{"ui.prompt", func(_, p map[string]any) { p["segments"] = []any{} }},
		{"agent.usage", func(_, p map[string]any) { p["output_tokens"] = -1 }},
		{"agent.text.delta", func(env, _ map[string]any) { env["type"] = "agent.text.done" }},
	}
	for i, c := range cases {
		raw, err := os.ReadFile(filepath.Join(goldenDir, c.msgType+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var env map[string]any
		if err := json.Unmarshal(raw, &env); err != nil {
			t.Fatal(err)
		}
		p, _ := env["payload"].(map[string]any)
		c.edit(env, p)
		b, _ := json.Marshal(env)
		_, decErr := protocol.Decode(b)
		doc, _ := sv.UnmarshalJSON(bytes.NewReader(b))
		schemaErr := schemas[c.msgType].Validate(doc)
		if decErr == nil || schemaErr == nil {
			t.Errorf("case %d (%s): decoder says %v, schema says %v; both must refuse", i, c.msgType, decErr, schemaErr)
		}
	}
}

// TestReferenceFresh fails when the generated message reference in
// docs/protocol.md differs from what the Go types and golden examples give.
func TestReferenceFresh(t *testing.T) {
	schemas, err := protocoldoc.Schemas("../..")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := protocoldoc.Reference(schemas, goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	const docPath = "../../docs/protocol.md"
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	want, err := protocoldoc.Splice(string(doc), ref)
	if err != nil {
		t.Fatal(err)
	}
	if *update && want != string(doc) {
		if err := os.WriteFile(docPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		doc = []byte(want)
	}
	if want != string(doc) {
		t.Fatal("docs/protocol.md's message reference is stale: run go test ./internal/protocoldoc -update")
	}
	for _, info := range protocol.Messages() {
		if !strings.Contains(string(doc), "#### `"+info.Type+"`") {
			t.Errorf("docs/protocol.md does not document %s", info.Type)
		}
	}
	for code := range protocol.ErrorCodes {
		if !strings.Contains(string(doc), "`"+code+"`") {
			t.Errorf("docs/protocol.md does not document error code %s", code)
		}
	}
}
