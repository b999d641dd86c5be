// Package protocoldoc generates the protocol's documentation from its Go
// types: a JSON Schema (draft 2020-12) for every message, built from the
// struct tags that protocol's own validator reads, and the message reference
// inside docs/protocol.md. The checked-in copies are tested against a fresh
// generation, so they cannot go stale.
package protocoldoc

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"

	"github.com/invopop/jsonschema"

	"github.com/ferry-dev/ferry/protocol"
)

// Draft is the JSON Schema dialect of the generated schemas.
const Draft = "https://json-schema.org/draft/2020-12/schema"

// BaseID prefixes each schema's $id.
const BaseID = "https://ferry.dev/schema/v1/"

// Generate returns the schema of every message type, keyed by file name
// ("control.file.search.json"). repoRoot is the module's root folder, whose
// protocol/ sources are read for the doc comments that become descriptions;
// "" skips them. (invopop/jsonschema keys comments by the relative path it
// walks, so the walk must start at the module root.)
func Generate(repoRoot string) (map[string][]byte, error) {
	schemas, err := Schemas(repoRoot)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for typ, s := range schemas {
		b, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("encode schema of %s: %w", typ, err)
		}
		out[typ+".json"] = append(b, '\n')
	}
	return out, nil
}

// Schemas returns the schema of every message type, keyed by type. It is not
// safe for concurrent use when repoRoot is set (it changes directory while
// reading comments).
func Schemas(repoRoot string) (map[string]*jsonschema.Schema, error) {
	r := &jsonschema.Reflector{
		AllowAdditionalProperties: true, // unknown fields are tolerated on the wire
		DoNotReference:            true,
		ExpandedStruct:            true,
		Anonymous:                 true,
		Mapper:                    mapCustom,
	}
	if repoRoot != "" {
		if err := addComments(r, repoRoot); err != nil {
			return nil, fmt.Errorf("read doc comments: %w", err)
		}
	}
	out := map[string]*jsonschema.Schema{}
	for _, info := range protocol.Messages() {
		out[info.Type] = envelope(r, info)
	}
	return out, nil
}

func addComments(r *jsonschema.Reflector, repoRoot string) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	if err := os.Chdir(repoRoot); err != nil {
		return err
	}
	defer func() { _ = os.Chdir(wd) }()
	return r.AddGoComments("github.com/ferry-dev/ferry", "protocol")
}

func envelope(r *jsonschema.Reflector, info protocol.MessageInfo) *jsonschema.Schema {
	env := r.ReflectFromType(reflect.TypeFor[protocol.Envelope]())
	env.Version = Draft
	env.ID = jsonschema.ID(BaseID + info.Type + ".json")
	env.Title = info.Type
	env.Description = info.Summary + "."
	typ, _ := env.Properties.Get("type")
	typ.Const = info.Type
	typ.MinLength = nil
	payload := r.ReflectFromType(info.Payload)
	payload.Version, payload.ID = "", ""
	env.Properties.Set("payload", payload)
	if info.NeedsSession {
		env.Required = append(env.Required, "session_id")
	}
	if info.NeedsParent {
		env.Required = append(env.Required, "parent_id")
	}
	return env
}

// mapCustom gives the schema of types whose wire form is not their Go shape.
func mapCustom(t reflect.Type) *jsonschema.Schema {
	if t == reflect.TypeFor[protocol.SelectedValue]() {
		return &jsonschema.Schema{OneOf: []*jsonschema.Schema{
			{Type: "string"},
			{Type: "array", Items: &jsonschema.Schema{Type: "string"}},
		}}
	}
	return nil
}
