// Package provider chooses and builds the llm.Provider ferry's agent talks
// to, from command-line flags and the environment.
//
// Flags win over the environment, field by field:
//
//	provider  --provider   FERRY_PROVIDER    anthropic | openai | ollama
//	model     --model      FERRY_MODEL
//	base URL  (flag)       ANTHROPIC_BASE_URL or OPENAI_BASE_URL
//	API key   (flag)       ANTHROPIC_API_KEY or OPENAI_API_KEY
//
// With no provider named, it is inferred: from the model name ("claude…"
// is Anthropic, "gpt-…", "o1…", "o3…", "o4…" OpenAI, any other name an
// OpenAI-compatible server), else from which provider's variables are set,
// Anthropic's first. "ollama" is the OpenAI-compatible provider with
// http://localhost:11434/v1 as its default base URL.
//
// Default models: anthropic.DefaultModel (claude-sonnet-4-5) and
// openai.DefaultModel (gpt-4.1) on OpenAI's own API. A compatible server
// (any other base URL) has no default: its models are whatever it serves,
// so the model must be named. A compatible server needs no key.
//
// When nothing usable is configured, FromEnv returns an error wrapping
// llm.ErrNotConfigured whose text says what to set, so ferry can start and
// tell the user.
package provider

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/anthropic"
	"github.com/ferry-dev/ferry/internal/llm/openai"
)

// Provider names.
const (
	Anthropic = "anthropic"
	OpenAI    = "openai"
	// Ollama is OpenAI-compatible, at OllamaBaseURL unless told otherwise.
	Ollama = "ollama"
)

// OllamaBaseURL is where a local Ollama serves its OpenAI-compatible API.
const OllamaBaseURL = "http://localhost:11434/v1"

// Environment variables read (names, not credentials).
//
//nolint:gosec // G101 mistakes the names of key variables for keys
const (
	EnvProvider         = "FERRY_PROVIDER"
	EnvModel            = "FERRY_MODEL"
	EnvAnthropicAPIKey  = "ANTHROPIC_API_KEY"
	EnvAnthropicBaseURL = "ANTHROPIC_BASE_URL"
	EnvOpenAIAPIKey     = "OPENAI_API_KEY"
	EnvOpenAIBaseURL    = "OPENAI_BASE_URL"
)

// Config selects a provider. Empty fields are unset.
type Config struct {
	// Provider is anthropic, openai or ollama.
	Provider string
	Model    string
	BaseURL  string
	APIKey   string
}

// NotConfiguredHelp is what the user is told when no provider is set up.
const NotConfiguredHelp = "set ANTHROPIC_API_KEY (Anthropic) or OPENAI_API_KEY / OPENAI_BASE_URL " +
	"(OpenAI-compatible, e.g. Ollama at " + OllamaBaseURL + "), or pass --provider/--model"

// FromEnv resolves flags over the environment (getenv, usually os.Getenv)
// and builds the provider.
func FromEnv(getenv func(string) string, flags Config) (llm.Provider, error) {
	c, err := Resolve(getenv, flags)
	if err != nil {
		return nil, err
	}
	return New(c), nil
}

// Resolve works out the complete configuration FromEnv would build: the
// provider (anthropic or openai; ollama resolves to openai), the model, base
// URL and key. Its errors wrap llm.ErrNotConfigured when something is
// missing, and say what.
func Resolve(getenv func(string) string, flags Config) (Config, error) {
	get := func(flag, env string) string {
		if v := strings.TrimSpace(flag); v != "" {
			return v
		}
		if env == "" {
			return ""
		}
		return strings.TrimSpace(getenv(env))
	}
	name := strings.ToLower(get(flags.Provider, EnvProvider))
	model := get(flags.Model, EnvModel)
	if name == "" {
		name = infer(getenv, flags, model)
		if name == "" {
			if flags.BaseURL != "" || flags.APIKey != "" {
				return Config{}, fmt.Errorf("%w: a base URL or API key was given but no provider: pass --provider anthropic or --provider openai", llm.ErrNotConfigured)
			}
			return Config{}, fmt.Errorf("%w: %s", llm.ErrNotConfigured, NotConfiguredHelp)
		}
	}

	var c Config
	switch name {
	case Anthropic:
		c = Config{Provider: Anthropic, Model: model,
			BaseURL: get(flags.BaseURL, EnvAnthropicBaseURL), APIKey: get(flags.APIKey, EnvAnthropicAPIKey)}
		if c.APIKey == "" && c.BaseURL == "" {
			return Config{}, fmt.Errorf("%w: the anthropic provider needs %s (or a base URL of a proxy that adds it)", llm.ErrNotConfigured, EnvAnthropicAPIKey)
		}
		if c.Model == "" {
			c.Model = anthropic.DefaultModel
		}
	case OpenAI, Ollama:
		c = Config{Provider: OpenAI, Model: model,
			BaseURL: get(flags.BaseURL, EnvOpenAIBaseURL), APIKey: get(flags.APIKey, EnvOpenAIAPIKey)}
		if name == Ollama && c.BaseURL == "" {
			c.BaseURL = OllamaBaseURL
		}
		if c.APIKey == "" && c.BaseURL == "" {
			return Config{}, fmt.Errorf("%w: the openai provider needs %s, or %s for an OpenAI-compatible server (e.g. Ollama at %s)",
				llm.ErrNotConfigured, EnvOpenAIAPIKey, EnvOpenAIBaseURL, OllamaBaseURL)
		}
		if c.Model == "" {
			if c.BaseURL != "" && !openai.IsOpenAI(c.BaseURL) {
				return Config{}, fmt.Errorf("%w: %s is an OpenAI-compatible server, not OpenAI: set %s or pass --model to one of its models",
					llm.ErrNotConfigured, c.BaseURL, EnvModel)
			}
			c.Model = openai.DefaultModel
		}
	default:
		return Config{}, fmt.Errorf("unknown model provider %q: use %s, %s or %s", name, Anthropic, OpenAI, Ollama)
	}
	if c.BaseURL != "" {
		if err := checkURL(c.BaseURL); err != nil {
			return Config{}, err
		}
	}
	return c, nil
}

// infer picks a provider when none is named: by the model's name, else by
// which provider has variables set.
func infer(getenv func(string) string, flags Config, model string) string {
	anthropicSet := getenv(EnvAnthropicAPIKey) != "" || getenv(EnvAnthropicBaseURL) != ""
	openaiSet := getenv(EnvOpenAIAPIKey) != "" || getenv(EnvOpenAIBaseURL) != ""
	m := strings.ToLower(model)
	switch {
	case strings.HasPrefix(m, "claude"):
		return Anthropic
	case strings.HasPrefix(m, "gpt-"), strings.HasPrefix(m, "chatgpt-"),
		strings.HasPrefix(m, "o1"), strings.HasPrefix(m, "o3"), strings.HasPrefix(m, "o4"):
		return OpenAI
	case m != "" && (openaiSet || flags.BaseURL != ""):
		return OpenAI // other models live on compatible servers
	case anthropicSet:
		return Anthropic
	case openaiSet:
		return OpenAI
	}
	return ""
}

// checkURL refuses a base URL that is not an absolute http(s) URL.
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return nil
	}
	if err == nil {
		err = errors.New("not an absolute http(s) URL")
	}
	return fmt.Errorf("model provider base URL %q: %w", s, err)
}

// New builds the provider c names (c as Resolve returns it).
func New(c Config) llm.Provider {
	if c.Provider == Anthropic {
		return anthropic.New(anthropic.Options{APIKey: c.APIKey, BaseURL: c.BaseURL, Model: c.Model})
	}
	return openai.New(openai.Options{APIKey: c.APIKey, BaseURL: c.BaseURL, Model: c.Model})
}
