package agent

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestCompileSchema pins what the output-schema validator accepts: drafts
// 2020-12 and 07, references inside the schema, and no document loaded
// from elsewhere.
func TestCompileSchema(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, schema string
		ok, bad      []string // answers accepted, answers refused
		compileErr   string   // part of the error; "" compiles
	}{
		{name: "object", schema: `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`,
			ok: []string{`{"n": 3}`, "```json\n{\"n\": 4}\n```"}, bad: []string{`{"n": "3"}`, `{}`, `{"n": 1.5}`, `[1]`}},
		{name: "draft 07", schema: `{"$schema":"http://json-schema.org/draft-07/schema#","type":"array","items":{"type":"string"},"maxItems":2}`,
			ok: []string{`["a"]`}, bad: []string{`["a","b","c"]`, `[1]`}},
		{name: "local ref", schema: `{"$defs":{"pos":{"type":"integer","minimum":1}},"type":"object","properties":{"n":{"$ref":"#/$defs/pos"}}}`,
			ok: []string{`{"n": 2}`}, bad: []string{`{"n": 0}`}},
		{name: "enum", schema: `{"enum":["red","green"]}`, ok: []string{`"red"`}, bad: []string{`"blue"`}},
		{name: "not JSON", schema: `{"type":`, compileErr: "not valid JSON"},
		{name: "bad keyword", schema: `{"type": 12}`, compileErr: "not a valid JSON Schema"},
		{name: "draft 04", schema: `{"$schema":"http://json-schema.org/draft-04/schema#"}`, compileErr: "not supported"},
		{name: "file ref", schema: `{"$ref":"file:///etc/passwd"}`, compileErr: "not a valid JSON Schema"},
		{name: "http ref", schema: `{"$ref":"http://127.0.0.1:1/s.json"}`, compileErr: "not a valid JSON Schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := compileSchema(json.RawMessage(tc.schema))
			if tc.compileErr != "" {
				var ae *Error
				if !errors.As(err, &ae) || ae.Code != CodeBadRequest || !strings.Contains(ae.Message, tc.compileErr) {
					t.Fatalf("compile %s: %v, want a bad request naming %q", tc.schema, err, tc.compileErr)
				}
				if strings.Contains(ae.Message, schemaURL) {
					t.Fatalf("the message shows the internal URL: %q", ae.Message)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range tc.ok {
				if _, err := s.check(a); err != nil {
					t.Errorf("answer %q refused: %v", a, err)
				}
			}
			for _, a := range tc.bad {
				if _, err := s.check(a); err == nil {
					t.Errorf("answer %q accepted", a)
				} else if strings.Contains(err.Error(), schemaURL) {
					t.Errorf("the error shows the internal URL: %v", err)
				}
			}
		})
	}
}
