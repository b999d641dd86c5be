package protocoldoc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/ferry-dev/ferry/protocol"
)

// Markers delimit the generated part of docs/protocol.md; the prose around
// them is written by hand.
const (
	BeginMarker = "<!-- BEGIN GENERATED REFERENCE: go test ./internal/protocoldoc -update -->"
	EndMarker   = "<!-- END GENERATED REFERENCE -->"
)

// Reference renders the message reference: per message its senders, envelope
// rules, a field table (type, required, default, rules, description) and the
// golden example from goldenDir; then the table of error codes.
func Reference(schemas map[string]*jsonschema.Schema, goldenDir string) (string, error) {
	var b strings.Builder
	b.WriteString(BeginMarker + "\n\n")
	groups := []struct{ prefix, title string }{
		{"control.", "Control messages (master → client)"},
		{"session.", "Session messages (client → master)"},
		{"agent.", "Agent events (client → master → UI)"},
		{"ui.", "UI messages (UI → master)"},
		{"master.", "Master messages (master → UI or client)"},
		{"error", "The error message (any direction)"},
	}
	for _, g := range groups {
		fmt.Fprintf(&b, "### %s\n\n", g.title)
		for _, info := range protocol.Messages() {
			if !strings.HasPrefix(info.Type, g.prefix) {
				continue
			}
			if err := renderMessage(&b, info, schemas[info.Type], goldenDir); err != nil {
				return "", err
			}
		}
	}
	b.WriteString("### Error codes\n\n| code | meaning |\n|---|---|\n")
	codes := make([]string, 0, len(protocol.ErrorCodes))
	for c := range protocol.ErrorCodes {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		fmt.Fprintf(&b, "| `%s` | %s |\n", c, protocol.ErrorCodes[c])
	}
	b.WriteString("\n" + EndMarker)
	return b.String(), nil
}

func renderMessage(b *strings.Builder, info protocol.MessageInfo, s *jsonschema.Schema, goldenDir string) error {
	fmt.Fprintf(b, "#### `%s`\n\n%s.\n\n", info.Type, capitalise(info.Summary))
	var senders []string
	for _, r := range []protocol.Role{protocol.RoleMaster, protocol.RoleClient, protocol.RoleUI} {
		if info.Senders&r != 0 {
			senders = append(senders, r.String())
		}
	}
	fmt.Fprintf(b, "- Sent by: %s.\n", strings.Join(senders, ", "))
	env := "`session_id` "
	if info.NeedsSession {
		env += "required"
	} else {
		env += "optional"
	}
	if info.NeedsParent {
		env += "; `parent_id` required (the message it answers)"
	}
	fmt.Fprintf(b, "- Envelope: %s.\n- Schema: [`schema/%s.json`](schema/%s.json)\n\n", env, info.Type, info.Type)
	payload, _ := s.Properties.Get("payload")
	if payload.Description != "" {
		fmt.Fprintf(b, "%s\n\n", payload.Description)
	}
	b.WriteString("| field | type | required | default | rules | description |\n|---|---|---|---|---|---|\n")
	rows := 0
	walk(payload, "", func(path string, f *jsonschema.Schema, required bool) {
		rows++
		req := ""
		if required {
			req = "yes"
		}
		def := ""
		if f.Default != nil {
			d, _ := json.Marshal(f.Default)
			def = "`" + string(d) + "`"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s | %s |\n", path, typeOf(f), req, def, rulesOf(f), cell(f.Description))
	})
	if rows == 0 {
		b.WriteString("| (none) | | | | | |\n")
	}
	raw, err := os.ReadFile(filepath.Join(goldenDir, info.Type+".json")) //nolint:gosec // a registered type names a file in the golden folder
	if err != nil {
		return fmt.Errorf("example of %s: %w", info.Type, err)
	}
	fmt.Fprintf(b, "\nExample:\n\n```json\n%s```\n\n", bytes.TrimLeft(raw, "\n"))
	return nil
}

// walk visits every property below s depth-first, in declaration order.
func walk(s *jsonschema.Schema, prefix string, visit func(path string, f *jsonschema.Schema, required bool)) {
	if s == nil || s.Properties == nil {
		return
	}
	for p := s.Properties.Oldest(); p != nil; p = p.Next() {
		path := p.Key
		if prefix != "" {
			path = prefix + "." + p.Key
		}
		visit(path, p.Value, slices.Contains(s.Required, p.Key))
		switch {
		case p.Value.Type == "object":
			walk(p.Value, path, visit)
		case p.Value.Type == "array" && p.Value.Items != nil && p.Value.Items.Type == "object":
			walk(p.Value.Items, path+"[]", visit)
		}
	}
}

func typeOf(s *jsonschema.Schema) string {
	switch {
	case len(s.OneOf) > 0:
		var alts []string
		for _, o := range s.OneOf {
			alts = append(alts, typeOf(o))
		}
		return strings.Join(alts, " \\| ")
	case s.Type == "array" && s.Items != nil:
		return typeOf(s.Items) + "[]"
	case s.Type == "":
		return "any"
	}
	return s.Type
}

func rulesOf(s *jsonschema.Schema) string {
	var r []string
	if len(s.Enum) > 0 {
		var vs []string
		for _, e := range s.Enum {
			vs = append(vs, fmt.Sprintf("`%v`", e))
		}
		r = append(r, "one of "+strings.Join(vs, ", "))
	}
	if s.Const != nil {
		r = append(r, fmt.Sprintf("`%v`", s.Const))
	}
	if s.Minimum != "" {
		r = append(r, "≥ "+string(s.Minimum))
	}
	if s.Maximum != "" {
		r = append(r, "≤ "+string(s.Maximum))
	}
	if s.MinLength != nil && *s.MinLength > 0 {
		r = append(r, fmt.Sprintf("length ≥ %d", *s.MinLength))
	}
	if s.MaxLength != nil {
		r = append(r, fmt.Sprintf("length ≤ %d", *s.MaxLength))
	}
	if s.MinItems != nil {
		r = append(r, fmt.Sprintf("≥ %d items", *s.MinItems))
	}
	if s.MaxItems != nil {
		r = append(r, fmt.Sprintf("≤ %d items", *s.MaxItems))
	}
	if s.Pattern != "" {
		r = append(r, "matches `"+s.Pattern+"`")
	}
	if s.Format != "" {
		r = append(r, s.Format)
	}
	return strings.Join(r, "; ")
}

func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\n", " "), "|", "\\|")
}

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Splice replaces the generated part of doc (between the markers) with ref.
func Splice(doc, ref string) (string, error) {
	i := strings.Index(doc, BeginMarker)
	j := strings.Index(doc, EndMarker)
	if i < 0 || j < i {
		return "", fmt.Errorf("docs/protocol.md lacks the generated-reference markers")
	}
	return doc[:i] + ref + doc[j+len(EndMarker):], nil
}
