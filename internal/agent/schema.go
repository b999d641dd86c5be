package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	// google/jsonschema-go, not a validator that compiles its meta-schemas
	// at package init (19 ms of every ferry process's start, issue 37): it
	// is linked already for MCP, and validates drafts 2020-12 and 07.
	"github.com/google/jsonschema-go/jsonschema"
)

// schemaURL names the prompt's schema when it is resolved; nothing is ever
// loaded from it.
const schemaURL = "urn:ferry:json_schema"

// supportedDrafts are the $schema values the validator implements; an
// absent $schema means draft 2020-12.
var supportedDrafts = map[string]bool{
	"": true,
	"https://json-schema.org/draft/2020-12/schema": true,
	"http://json-schema.org/draft-07/schema#":      true,
	"http://json-schema.org/draft-07/schema":       true,
	"https://json-schema.org/draft-07/schema#":     true,
	"https://json-schema.org/draft-07/schema":      true,
}

// outputSchema is a prompt's json_schema, resolved.
type outputSchema struct {
	raw    json.RawMessage
	schema *jsonschema.Resolved
}

// compileSchema compiles a json_schema. References to other documents are
// refused (the schema comes from the network; it must not make the client
// read files or fetch URLs): the resolver has no loader.
func compileSchema(raw json.RawMessage) (*outputSchema, error) {
	if !json.Valid(raw) {
		return nil, &Error{Code: CodeBadRequest, Message: "config_overrides.json_schema is not valid JSON"}
	}
	var doc jsonschema.Schema
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, &Error{Code: CodeBadRequest, Message: "config_overrides.json_schema is not a valid JSON Schema: " + schemaErrorText(err), Err: err}
	}
	if !supportedDrafts[doc.Schema] {
		return nil, &Error{Code: CodeBadRequest, Message: fmt.Sprintf("config_overrides.json_schema: $schema %q is not supported (use draft 2020-12 or draft-07)", doc.Schema)}
	}
	s, err := doc.Resolve(&jsonschema.ResolveOptions{BaseURI: schemaURL})
	if err != nil {
		return nil, &Error{Code: CodeBadRequest, Message: "config_overrides.json_schema is not a valid JSON Schema: " + schemaErrorText(err), Err: err}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, &Error{Code: CodeBadRequest, Message: "config_overrides.json_schema is not valid JSON", Err: err}
	}
	return &outputSchema{raw: buf.Bytes(), schema: s}, nil
}

// instruction tells the model the shape its final answer must have.
func (s *outputSchema) instruction() string {
	return "Your final answer must be a single JSON value valid against this JSON Schema, and nothing else " +
		"(no prose, no code fence):\n" + string(s.raw)
}

// check extracts the JSON value of a final answer and validates it; the
// error says what failed, for the model's retry and for the user.
func (s *outputSchema) check(answer string) (json.RawMessage, error) {
	text := extractJSON(answer)
	if text == "" {
		return nil, errors.New("the answer holds no JSON value")
	}
	var inst any
	if err := json.Unmarshal([]byte(text), &inst); err != nil {
		return nil, fmt.Errorf("the answer is not valid JSON: %s", schemaErrorText(err))
	}
	if err := s.schema.Validate(inst); err != nil {
		return nil, errors.New(schemaErrorText(err))
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(text)); err != nil {
		return nil, fmt.Errorf("the answer is not valid JSON: %w", err)
	}
	return buf.Bytes(), nil
}

// extractJSON finds the JSON value in an answer: the whole text, the
// inside of a code fence, or the span from the first { or [ to the last
// matching bracket.
func extractJSON(s string) string {
	s = strings.TrimSpace(s)
	if json.Valid([]byte(s)) {
		return s
	}
	if i := strings.Index(s, "```"); i >= 0 {
		rest := s[i+3:]
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
			rest = rest[nl+1:]
		}
		if j := strings.Index(rest, "```"); j >= 0 {
			if in := strings.TrimSpace(rest[:j]); json.Valid([]byte(in)) {
				return in
			}
		}
	}
	for _, pair := range [][2]string{{"{", "}"}, {"[", "]"}} {
		i, j := strings.Index(s, pair[0]), strings.LastIndex(s, pair[1])
		if i >= 0 && j > i && json.Valid([]byte(s[i:j+1])) {
			return s[i : j+1]
		}
	}
	return s
}

// schemaErrorText is a validator error without the internal schema URL.
func schemaErrorText(err error) string {
	msg := err.Error()
	msg = strings.ReplaceAll(msg, schemaURL+"#", "")
	msg = strings.ReplaceAll(msg, schemaURL, "the schema")
	return strings.TrimSpace(msg)
}
