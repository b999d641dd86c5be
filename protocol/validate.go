package protocol

import (
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// rules are the constraints of one field, read once from its struct tags: a
// json tag without omitempty makes it required; the jsonschema tag (the same
// one the schema generator reads) carries enum, ranges, lengths, pattern and
// format.
type rules struct {
	name      string
	index     int
	required  bool
	enum      []string
	minimum   *float64
	maximum   *float64
	minLength int
	maxLength int // -1: none
	minItems  int
	maxItems  int // -1: none
	pattern   *regexp.Regexp
	format    string
	object    bool // type=object on a json.RawMessage
}

var (
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	fieldCache      sync.Map // reflect.Type → []rules
)

func fieldsOf(t reflect.Type) []rules {
	if v, ok := fieldCache.Load(t); ok {
		return v.([]rules)
	}
	var out []rules
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		r := rules{name: name, index: i, required: !strings.Contains(opts, "omitempty"), maxLength: -1, maxItems: -1}
		for _, kv := range strings.Split(f.Tag.Get("jsonschema"), ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "enum":
				r.enum = append(r.enum, v)
			case "minimum":
				r.minimum = parseFloatTag(v)
			case "maximum":
				r.maximum = parseFloatTag(v)
			case "minLength":
				r.minLength, _ = strconv.Atoi(v)
			case "maxLength":
				r.maxLength, _ = strconv.Atoi(v)
			case "minItems":
				r.minItems, _ = strconv.Atoi(v)
			case "maxItems":
				r.maxItems, _ = strconv.Atoi(v)
			case "pattern":
				r.pattern = regexp.MustCompile(v)
			case "format":
				r.format = v
			case "type":
				r.object = v == "object"
			}
		}
		out = append(out, r)
	}
	fieldCache.Store(t, out)
	return out
}

func parseFloatTag(s string) *float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic("protocol: bad numeric tag " + s)
	}
	return &f
}

// check validates the generic JSON value v (as decoded with UseNumber)
// against Go type t and the field's rules r, naming failures by path.
func check(path string, v any, t reflect.Type, r *rules) *Error {
	if v == nil {
		if r.required {
			return errorf(CodeMissingField, path, "is required and may not be null")
		}
		return nil
	}
	if t == rawMessageType {
		if _, ok := v.(map[string]any); r.object && !ok {
			return wrongType(path, "object", v)
		}
		return nil
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) && t.Kind() == reflect.Struct {
		raw, _ := json.Marshal(v)
		if err := reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(raw); err != nil {
			return errorf(CodeWrongType, path, "%s", err.Error())
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return check(path, v, t.Elem(), r)
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			return wrongType(path, "string", v)
		}
		return checkString(path, s, r)
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return wrongType(path, "boolean", v)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			return wrongType(path, "integer", v)
		}
		i, err := strconv.ParseInt(string(n), 10, t.Bits())
		if err != nil {
			if strings.ContainsAny(string(n), ".eE") {
				return errorf(CodeWrongType, path, "want an integer, got %s", n)
			}
			return errorf(CodeInvalidValue, path, "%s is out of range", n)
		}
		return checkRange(path, float64(i), r)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if !ok {
			return wrongType(path, "integer", v)
		}
		u, err := strconv.ParseUint(string(n), 10, t.Bits())
		if err != nil {
			if strings.ContainsAny(string(n), ".eE") {
				return errorf(CodeWrongType, path, "want an integer, got %s", n)
			}
			return errorf(CodeInvalidValue, path, "%s is out of range (a non-negative integer)", n)
		}
		return checkRange(path, float64(u), r)
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			return wrongType(path, "number", v)
		}
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil || math.IsInf(f, 0) {
			return errorf(CodeInvalidValue, path, "%s is out of range", n)
		}
		return checkRange(path, f, r)
	case reflect.Slice:
		a, ok := v.([]any)
		if !ok {
			return wrongType(path, "array", v)
		}
		if len(a) < r.minItems {
			return errorf(CodeInvalidValue, path, "needs at least %d item(s), has %d", r.minItems, len(a))
		}
		if r.maxItems >= 0 && len(a) > r.maxItems {
			return errorf(CodeInvalidValue, path, "has %d items, at most %d allowed", len(a), r.maxItems)
		}
		elem := rules{required: true, maxLength: -1, maxItems: -1}
		for i, x := range a {
			if err := check(fmt.Sprintf("%s[%d]", path, i), x, t.Elem(), &elem); err != nil {
				return err
			}
		}
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return wrongType(path, "object", v)
		}
		fields := fieldsOf(t)
		if err := refuseCaseVariants(path, obj, func(yield func(string) bool) {
			for _, f := range fields {
				if !yield(f.name) {
					return
				}
			}
		}); err != nil {
			return err
		}
		for _, f := range fields {
			sub := f.name
			if path != "" {
				sub = path + "." + f.name
			}
			x, present := obj[f.name]
			if !present {
				if f.required {
					return errorf(CodeMissingField, sub, "is required")
				}
				continue
			}
			if err := check(sub, x, t.Field(f.index).Type, &f); err != nil {
				return err
			}
		}
	case reflect.Interface:
		// any JSON value
	default:
		panic("protocol: no wire check for kind " + t.Kind().String())
	}
	return nil
}

func checkString(path, s string, r *rules) *Error {
	if len(r.enum) > 0 {
		for _, e := range r.enum {
			if s == e {
				return nil
			}
		}
		return errorf(CodeInvalidValue, path, "%q is not one of %s", truncate(s), strings.Join(r.enum, ", "))
	}
	n := utf8.RuneCountInString(s)
	if n < r.minLength {
		if r.minLength == 1 {
			return errorf(CodeInvalidValue, path, "may not be empty")
		}
		return errorf(CodeInvalidValue, path, "is %d characters, at least %d needed", n, r.minLength)
	}
	if r.maxLength >= 0 && n > r.maxLength {
		return errorf(CodeInvalidValue, path, "is %d characters, at most %d allowed", n, r.maxLength)
	}
	if r.pattern != nil && !r.pattern.MatchString(s) {
		if r.format == "uuid" { // the pattern narrows the format: say so plainly
			return errorf(CodeInvalidValue, path, "%q is not a UUID v4 (xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx)", truncate(s))
		}
		return errorf(CodeInvalidValue, path, "%q does not match %s", truncate(s), r.pattern)
	}
	switch r.format {
	case "uuid":
		if s != "" && !IsUUID(s) {
			return errorf(CodeInvalidValue, path, "%q is not a UUID", truncate(s))
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return errorf(CodeInvalidValue, path, "%q is not an RFC 3339 date-time", truncate(s))
		}
	}
	return nil
}

func checkRange(path string, f float64, r *rules) *Error {
	if r.minimum != nil && f < *r.minimum {
		return errorf(CodeInvalidValue, path, "%v is below the minimum %v", f, *r.minimum)
	}
	if r.maximum != nil && f > *r.maximum {
		return errorf(CodeInvalidValue, path, "%v is above the maximum %v", f, *r.maximum)
	}
	return nil
}

func wrongType(path, want string, v any) *Error {
	return errorf(CodeWrongType, path, "want %s, got %s", want, jsonKind(v))
}

func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "null"
}

// truncate keeps echoed values short: an error must not be a way to reflect
// megabytes back at the sender.
func truncate(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// refuseCaseVariants refuses a key that differs from a field name only in
// case. encoding/json matches field names case-insensitively, so such a key
// would fill the field without passing the field's checks (and, beside the
// exact key, override it). Keys matching no field are still tolerated.
func refuseCaseVariants(path string, obj map[string]any, names iter.Seq[string]) *Error {
	// Of several variants, the first in byte order is named, so that the
	// same message always gets the same error (maps have no order).
	var bad, badOf string
	for key := range obj {
		if bad != "" && key >= bad {
			continue
		}
		exact := false
		var variantOf string
		for name := range names {
			if key == name {
				exact = true
				break
			}
			if variantOf == "" && strings.EqualFold(key, name) {
				variantOf = name
			}
		}
		if !exact && variantOf != "" {
			bad, badOf = key, variantOf
		}
	}
	if bad == "" {
		return nil
	}
	sub := bad
	if path != "" {
		sub = path + "." + bad
	}
	return errorf(CodeInvalidValue, truncate(sub), "field names are case-sensitive: did you mean %q?", badOf)
}
