package tools

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestSchemasMatchParams checks each input schema against the struct the
// input is decoded into: the same property names, a JSON type that fits
// each field, required properties that exist, and no others accepted.
// The schemas are generated from the structs (inputSchema); this guards
// the generator and the tags.
func TestSchemasMatchParams(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		schema json.RawMessage
		params any
	}{
		{"Bash", bashSchema(), BashInput{}},
		{"Edit", editSchema(), editParams{}},
		{"Glob", globSchema(), globParams{}},
		{"Grep", grepSchema(), grepParams{}},
		{"Read", readSchema(), readParams{}},
		{"Write", writeSchema(), writeParams{}},
		{"MultiEdit", multiEditSchema(), multiEditParams{}},
		{"MultiEdit.edits", multiEditItemSchema(t), multiEditItem{}},
		{"NotebookEdit", notebookEditSchema(), notebookEditParams{}},
		{"WebFetch", webFetchSchema(), webFetchParams{}},
		{"TodoWrite", todoWriteSchema(), todoWriteParams{}},
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

// TestSchemasMatchGolden compares each generated schema with the
// hand-written one the model saw before (testdata/schemas): the same
// descriptions, types, required, enums, bounds and defaults, and the
// properties in the same order. A change to what the model sees must
// change the golden copy too, so it shows in review.
func TestSchemasMatchGolden(t *testing.T) {
	t.Parallel()
	for _, tool := range []Tool{Bash{}, Edit{}, Glob{}, Grep{}, Read{}, Write{}, MultiEdit{}, NotebookEdit{}} {
		t.Run(tool.Name(), func(t *testing.T) {
			t.Parallel()
			golden, err := os.ReadFile(filepath.Join("testdata", "schemas", tool.Name()+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var want, got any
			if err := json.Unmarshal(golden, &want); err != nil {
				t.Fatalf("golden: %v", err)
			}
			if err := json.Unmarshal(tool.InputSchema(), &got); err != nil {
				t.Fatalf("generated: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("generated schema\n%s\ndiffers from testdata/schemas/%s.json\n%s", tool.InputSchema(), tool.Name(), golden)
			}
			if g, w := propertyOrder(t, tool.InputSchema()), propertyOrder(t, golden); len(w) == 0 || !slices.Equal(g, w) {
				t.Fatalf("properties in order %q, golden %q", g, w)
			}
		})
	}
}

// propertyOrder is the order of the schema's property names.
func propertyOrder(t *testing.T, schema []byte) []string {
	t.Helper()
	var s struct {
		Properties json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(s.Properties))
	var names []string
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				depth++
			} else {
				depth--
			}
		case string:
			if depth == 1 { // a key: each value is skipped whole below
				names = append(names, v)
				// Skip the property's value.
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return names
}

// multiEditItemSchema is the schema of one of MultiEdit's edits, as a
// closed object schema of its own.
func multiEditItemSchema(t *testing.T) json.RawMessage {
	t.Helper()
	var s struct {
		Properties struct {
			Edits struct {
				Items json.RawMessage `json:"items"`
			} `json:"edits"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(multiEditSchema(), &s); err != nil {
		t.Fatal(err)
	}
	return s.Properties.Edits.Items
}
