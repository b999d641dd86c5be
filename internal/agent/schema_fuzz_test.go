package agent

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzExtractJSON checks the extraction of a final answer's JSON value:
// it never panics, and what it returns is either valid JSON found in the
// answer or the answer itself (trimmed), which validation then rejects.
func FuzzExtractJSON(f *testing.F) {
	for _, s := range []string{
		`{"n": 1}`,
		"```json\n{\"n\": 1}\n```",
		"Here it is:\n```\n[1, 2]\n```\nDone.",
		`The answer is {"a": {"b": [1, 2]}} as requested.`,
		`[1, 2] and {"x": 1}`,
		"```json\n{broken\n```",
		"no json at all",
		"",
		"```",
		"{",
		`"just a string"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, answer string) {
		got := extractJSON(answer)
		if got == strings.TrimSpace(answer) {
			return
		}
		if !json.Valid([]byte(got)) {
			t.Fatalf("extractJSON(%q) = %q: neither the answer nor valid JSON", answer, got)
		}
		if !strings.Contains(answer, got) {
			t.Fatalf("extractJSON(%q) = %q: not part of the answer", answer, got)
		}
	})
}

// FuzzSchemaCheck checks that validating any answer against a schema
// never panics, and that an accepted answer is compact, valid JSON.
func FuzzSchemaCheck(f *testing.F) {
	s, err := compileSchema(json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`))
	if err != nil {
		f.Fatal(err)
	}
	for _, a := range []string{`{"n": 1}`, `{"n": "1"}`, "```json\n{\"n\": 2}\n```", `[]`, `nope`, `{"n": 1e400}`} {
		f.Add(a)
	}
	f.Fuzz(func(t *testing.T, answer string) {
		doc, err := s.check(answer)
		if err != nil {
			return
		}
		// Numbers beyond float64 (1e400) are valid JSON: decode them as
		// json.Number.
		var v map[string]any
		dec := json.NewDecoder(bytes.NewReader(doc))
		dec.UseNumber()
		if dec.Decode(&v) != nil {
			t.Fatalf("accepted %q as %q: not a JSON object", answer, doc)
		}
		if _, ok := v["n"]; !ok {
			t.Fatalf("accepted %q without n", answer)
		}
	})
}
