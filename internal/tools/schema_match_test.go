package tools

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestSchemasMatchParams guards the hand-written input schemas against
// drift from the structs the input is decoded into: the same property
// names, a JSON type that fits each field, required properties that
// exist, and no others accepted. (Issue 18 asks for schemas generated
// from the structs; until then this test is what keeps the two in step.)
func TestSchemasMatchParams(t *testing.T) {
	for _, c := range []struct {
		name   string
		schema json.RawMessage
		params any
	}{
		{"Bash", bashSchema, BashInput{}},
		{"Edit", editSchema, editParams{}},
		{"Glob", globSchema, globParams{}},
		{"Grep", grepSchema, grepParams{}},
		{"Read", readSchema, readParams{}},
		{"Write", writeSchema, writeParams{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s struct {
				Type                 string                           `json:"type"`
				Properties           map[string]struct{ Type string } `json:"properties"`
				Required             []string                         `json:"required"`
				AdditionalProperties *bool                            `json:"additionalProperties"`
			}
			if err := json.Unmarshal(c.schema, &s); err != nil {
				t.Fatalf("schema does not parse: %v", err)
			}
			if s.Type != "object" || s.AdditionalProperties == nil || *s.AdditionalProperties {
				t.Errorf("schema must be a closed object: type %q, additionalProperties %v", s.Type, s.AdditionalProperties)
			}
			fields := map[string]string{} // json name -> schema type of the Go field
			rt := reflect.TypeOf(c.params)
			for i := range rt.NumField() {
				f := rt.Field(i)
				tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				if !f.IsExported() || tag == "" || tag == "-" {
					continue
				}
				fields[tag] = schemaType(f.Type)
			}
			for name, want := range fields {
				p, ok := s.Properties[name]
				switch {
				case !ok:
					t.Errorf("field %q has no schema property", name)
				case p.Type != want:
					t.Errorf("property %q is %q in the schema, %q in the struct", name, p.Type, want)
				}
			}
			for name := range s.Properties {
				if _, ok := fields[name]; !ok {
					t.Errorf("schema property %q has no struct field", name)
				}
			}
			for _, name := range s.Required {
				if _, ok := fields[name]; !ok {
					t.Errorf("required %q has no struct field", name)
				}
			}
		})
	}
}

// schemaType is the JSON Schema type a field of type t decodes from.
func schemaType(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	}
	return "object"
}
