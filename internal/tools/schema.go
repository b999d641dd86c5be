package tools

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/invopop/jsonschema"
)

// inputSchema is the input schema of a tool whose input decodes into P,
// generated from P's struct tags, so the schema cannot drift from what
// Run decodes: json names the properties (in field order),
// jsonschema_description says what the model is told of each, and
// jsonschema carries required, bounds (minimum, maximum, minLength), enum
// values and defaults. The schema is a closed object, as DecodeInput
// rejects unknown fields; it has no $schema or $id, which no model needs.
// testdata/schemas holds what the model saw before the schemas were
// generated; a test keeps the two equivalent.
func inputSchema[P any]() json.RawMessage {
	r := &jsonschema.Reflector{
		RequiredFromJSONSchemaTags: true, // a pointer or omitempty says nothing about required
		DoNotReference:             true,
		ExpandedStruct:             true,
		Anonymous:                  true,
	}
	s := r.ReflectFromType(reflect.TypeFor[P]())
	// The object's keys in the order the hand-written schemas had them;
	// the properties keep the fields' order.
	out := struct {
		Type                 string   `json:"type"`
		Properties           any      `json:"properties"`
		Required             []string `json:"required,omitempty"`
		AdditionalProperties bool     `json:"additionalProperties"`
	}{"object", s.Properties, s.Required, false}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		// A struct's schema always encodes: this is a programming error.
		panic(fmt.Sprintf("tools: input schema of %v: %v", reflect.TypeFor[P](), err))
	}
	return b
}
