package apicall_test

import (
	"testing"

	"github.com/ferry-dev/ferry/internal/llm/internal/apicall"
)

func TestEndpoint(t *testing.T) {
	for _, c := range []struct{ base, path, want string }{
		{"https://api.openai.com/v1", "chat/completions", "https://api.openai.com/v1/chat/completions"},
		{"https://api.openai.com/v1/", "models", "https://api.openai.com/v1/models"},
		{"https://api.anthropic.com", "v1/messages", "https://api.anthropic.com/v1/messages"},
		{"http://127.0.0.1:8080/proxy/v1?key=x", "models", "http://127.0.0.1:8080/proxy/v1/models"},
		{"://nope", "models", ""},
	} {
		if got := apicall.Endpoint(c.base, c.path); got != c.want {
			t.Errorf("Endpoint(%q, %q) = %q, want %q", c.base, c.path, got, c.want)
		}
	}
}

func TestDecode(t *testing.T) {
	var v struct {
		A string `json:"a"`
		B int    `json:"b"`
	}
	// A mistyped field is skipped and the rest still decodes.
	if err := apicall.Decode([]byte(`{"a": 5, "b": 7}`), &v); err != nil || v.A != "" || v.B != 7 {
		t.Fatalf("mistyped field: %+v %v", v, err)
	}
	if err := apicall.Decode([]byte(`{"a": `), &v); err == nil {
		t.Fatal("malformed JSON accepted")
	}
	if err := apicall.Decode([]byte(`[1]`), &v); err == nil {
		t.Fatal("an array for an object accepted")
	}
}
