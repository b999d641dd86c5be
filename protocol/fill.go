package protocol

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// Decode's first pass builds the generic value of a message (check needs
// it); for most payloads the typed one is then filled from that value, not
// by decoding the bytes twice more (the envelope, then the payload, each
// scanned twice by encoding/json). On a 1 KB text delta that was two thirds
// of decoding. fill does what json.Unmarshal does for the kinds payloads
// use, on values check has already accepted; a payload type with anything
// else (raw JSON, its own UnmarshalJSON or UnmarshalText, embedded structs,
// a ",string" option, maps) keeps the byte decoding. TestFillMatchesUnmarshal
// and FuzzDecode hold the two ways to the same result.

var textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()

// fills tells, for each registered payload type, whether Decode fills it
// from the generic value (no raw JSON in it, and only kinds fill knows).
var fills = sync.OnceValue(func() map[reflect.Type]bool {
	m := make(map[reflect.Type]bool, len(registry))
	for _, s := range registry {
		m[s.payload] = !holdsRaw()[s.payload] && canFillType(s.payload, map[reflect.Type]bool{})
	}
	return m
})

func canFillType(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return true // a recursive type: judged where it started
	}
	seen[t] = true
	if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) ||
		t.Implements(textUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return false
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	case reflect.Interface:
		return t.NumMethod() == 0
	case reflect.Pointer:
		return canFillType(t.Elem(), seen)
	case reflect.Slice:
		// []byte is base64 text to encoding/json.
		return t.Elem().Kind() != reflect.Uint8 && canFillType(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if f.Anonymous || strings.Contains(opts, "string") || !canFillType(f.Type, seen) {
				return false
			}
		}
		return true
	}
	return false
}

// fill stores the generic value v (decoded with UseNumber, accepted by
// check for dst's type) in dst, as json.Unmarshal would store its JSON. It
// reports false for what json.Unmarshal would refuse and check does not (a
// number out of float64's range in an interface), for the caller to decode
// the bytes and say what is wrong.
func fill(dst reflect.Value, v any) bool {
	if v == nil {
		// null: a pointer, slice or interface stays nil, anything else
		// as it was; dst is new, so both are its zero value.
		return true
	}
	t := dst.Type()
	switch t.Kind() {
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		if !fill(p.Elem(), v) {
			return false
		}
		dst.Set(p)
	case reflect.String:
		dst.SetString(v.(string))
	case reflect.Bool:
		dst.SetBool(v.(bool))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, _ := strconv.ParseInt(string(v.(json.Number)), 10, t.Bits())
		dst.SetInt(n)
	case reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, _ := strconv.ParseUint(string(v.(json.Number)), 10, t.Bits())
		dst.SetUint(n)
	case reflect.Float64:
		f, _ := strconv.ParseFloat(string(v.(json.Number)), 64)
		dst.SetFloat(f)
	case reflect.Slice:
		a := v.([]any)
		s := reflect.MakeSlice(t, len(a), len(a))
		for i, x := range a {
			if !fill(s.Index(i), x) {
				return false
			}
		}
		dst.Set(s)
	case reflect.Struct:
		obj := v.(map[string]any)
		for _, f := range fieldsOf(t) {
			if x, ok := obj[f.name]; ok && !fill(dst.Field(f.index), x) {
				return false
			}
		}
	case reflect.Interface:
		p, ok := plain(v)
		if !ok {
			return false
		}
		dst.Set(reflect.ValueOf(p))
	}
	return true
}

// plain is v as json.Unmarshal gives it to an interface: numbers as
// float64 (v is the decoder's own value, so it is changed in place); false
// for a number float64 cannot hold.
func plain(v any) (any, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil
	case []any:
		for i := range x {
			p, ok := plain(x[i])
			if !ok {
				return nil, false
			}
			x[i] = p
		}
	case map[string]any:
		for k, e := range x {
			p, ok := plain(e)
			if !ok {
				return nil, false
			}
			x[k] = p
		}
	}
	return v, true
}
