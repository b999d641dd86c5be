package provider_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/llm/provider"
)

// env is a getenv over a map.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestResolve(t *testing.T) {
	cases := []struct {
		name  string
		env   map[string]string
		flags provider.Config
		want  provider.Config
	}{
		{"anthropic key alone",
			map[string]string{"ANTHROPIC_API_KEY": "ak"}, provider.Config{},
			provider.Config{Provider: "anthropic", Model: "claude-sonnet-4-5", APIKey: "ak"}},
		{"openai key alone",
			map[string]string{"OPENAI_API_KEY": "ok"}, provider.Config{},
			provider.Config{Provider: "openai", Model: "gpt-4.1", APIKey: "ok"}},
		{"both keys: anthropic first",
			map[string]string{"OPENAI_API_KEY": "ok", "ANTHROPIC_API_KEY": "ak"}, provider.Config{},
			provider.Config{Provider: "anthropic", Model: "claude-sonnet-4-5", APIKey: "ak"}},
		{"both keys: the model decides",
			map[string]string{"OPENAI_API_KEY": "ok", "ANTHROPIC_API_KEY": "ak", "FERRY_MODEL": "gpt-5"}, provider.Config{},
			provider.Config{Provider: "openai", Model: "gpt-5", APIKey: "ok"}},
		{"local server needs no key",
			map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1", "FERRY_MODEL": "qwen2.5-coder"}, provider.Config{},
			provider.Config{Provider: "openai", Model: "qwen2.5-coder", BaseURL: "http://127.0.0.1:8000/v1"}},
		{"ollama by name",
			map[string]string{}, provider.Config{Provider: "Ollama", Model: "llama3.1"},
			provider.Config{Provider: "openai", Model: "llama3.1", BaseURL: provider.OllamaBaseURL}},
		{"flags win over the environment",
			map[string]string{"FERRY_PROVIDER": "openai", "FERRY_MODEL": "gpt-4o", "OPENAI_API_KEY": "env", "ANTHROPIC_API_KEY": "envak", "ANTHROPIC_BASE_URL": "http://env.invalid"},
			provider.Config{Provider: "anthropic", Model: "claude-opus-4-5", APIKey: "flag", BaseURL: "https://proxy.example/"},
			provider.Config{Provider: "anthropic", Model: "claude-opus-4-5", APIKey: "flag", BaseURL: "https://proxy.example/"}},
		{"environment fills what flags leave",
			map[string]string{"ANTHROPIC_API_KEY": "ak", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/"}, provider.Config{Model: "claude-haiku-4-5"},
			provider.Config{Provider: "anthropic", Model: "claude-haiku-4-5", APIKey: "ak", BaseURL: "http://127.0.0.1:9/"}},
		{"anthropic base URL alone (a proxy or the fake)",
			map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}, provider.Config{},
			provider.Config{Provider: "anthropic", Model: "claude-sonnet-4-5", BaseURL: "http://127.0.0.1:9"}},
		{"OpenAI's own base URL keeps the default model",
			map[string]string{"OPENAI_API_KEY": "ok", "OPENAI_BASE_URL": "https://api.openai.com/v1"}, provider.Config{},
			provider.Config{Provider: "openai", Model: "gpt-4.1", APIKey: "ok", BaseURL: "https://api.openai.com/v1"}},
	}
	for _, c := range cases {
		got, err := provider.Resolve(env(c.env), c.flags)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestNotConfigured(t *testing.T) {
	cases := []struct {
		name  string
		env   map[string]string
		flags provider.Config
		says  []string
	}{
		{"nothing at all", nil, provider.Config{},
			[]string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "http://localhost:11434/v1", "--provider"}},
		{"a model but no key", nil, provider.Config{Model: "claude-sonnet-4-5"},
			[]string{"ANTHROPIC_API_KEY"}},
		{"openai named but no key", nil, provider.Config{Provider: "openai"},
			[]string{"OPENAI_API_KEY", "OPENAI_BASE_URL"}},
		{"compatible server without a model", map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1"}, provider.Config{},
			[]string{"FERRY_MODEL", "--model"}},
		{"a key but no provider", nil, provider.Config{APIKey: "k"},
			[]string{"--provider"}},
	}
	for _, c := range cases {
		p, err := provider.FromEnv(env(c.env), c.flags)
		if !errors.Is(err, llm.ErrNotConfigured) {
			t.Errorf("%s: FromEnv = %v, %v; want ErrNotConfigured", c.name, p, err)
			continue
		}
		for _, s := range c.says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %q does not mention %s", c.name, err, s)
			}
		}
	}
}

func TestBadConfig(t *testing.T) {
	for _, flags := range []provider.Config{
		{Provider: "gemini", APIKey: "k"},
		{Provider: "anthropic", APIKey: "k", BaseURL: "localhost:8080"},
		{Provider: "openai", BaseURL: "ftp://x/v1", Model: "m"},
	} {
		_, err := provider.FromEnv(env(nil), flags)
		if err == nil || errors.Is(err, llm.ErrNotConfigured) {
			t.Errorf("FromEnv(%+v) = %v, want a configuration error", flags, err)
		}
	}
}

// TestFromEnvTalksToTheServer checks the resolved settings reach the wire:
// key, base URL and model, through each real SDK.
func TestFromEnvTalksToTheServer(t *testing.T) {
	for _, c := range []struct {
		format  fake.Format
		env     map[string]string
		wantKey string
	}{
		{fake.Anthropic, map[string]string{"ANTHROPIC_API_KEY": "sk-ant-env", "FERRY_MODEL": "claude-x"}, "sk-ant-env"},
		{fake.OpenAI, map[string]string{"FERRY_MODEL": "local-model"}, ""},
		{fake.OpenAI, map[string]string{"OPENAI_API_KEY": "sk-env", "FERRY_MODEL": "gpt-x"}, "sk-env"},
	} {
		srv := fake.New(t)
		if c.format == fake.Anthropic {
			c.env["ANTHROPIC_BASE_URL"] = srv.BaseURL(c.format)
		} else {
			c.env["OPENAI_BASE_URL"] = srv.BaseURL(c.format)
		}
		// The SDKs' own environment reading must not leak in.
		t.Setenv("OPENAI_API_KEY", "sk-process-env")
		t.Setenv("ANTHROPIC_API_KEY", "sk-ant-process-env")
		p, err := provider.FromEnv(env(c.env), provider.Config{})
		if err != nil {
			t.Fatal(err)
		}
		srv.Script(fake.Reply{Text: []string{"hi"}})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err = p.Stream(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockText, Text: "x"}}}}},
			func(llm.Event) error { return nil })
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", c.format, err)
		}
		r := srv.ModelRequests()[0]
		// The Anthropic SDK sends the key as x-api-key or as a bearer token
		// (v2 does the latter); OpenAI's is a bearer token.
		got := r.Header.Get("x-api-key")
		if got == "" {
			got = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		}
		if got != c.wantKey {
			t.Errorf("%s: key sent = %q, want %q", c.format, got, c.wantKey)
		}
		if r.Model() != c.env["FERRY_MODEL"] || p.Model() != c.env["FERRY_MODEL"] {
			t.Errorf("%s: model sent %q, provider says %q, want %q", c.format, r.Model(), p.Model(), c.env["FERRY_MODEL"])
		}
		if p.Name() != string(c.format) {
			t.Errorf("Name = %q, want %q", p.Name(), c.format)
		}
	}
}
