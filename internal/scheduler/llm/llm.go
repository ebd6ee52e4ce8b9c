// Package llm is Mosaic's small client for large language models: the Anthropic Messages
// API or any OpenAI-compatible chat-completions endpoint, both spoken directly over
// net/http (anthropic.go and openai.go cite the wire formats). It only sends a prompt
// and returns the text answer; callers parse and check it. API keys are never logged or
// put in errors.
package llm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Client sends one prompt and returns the model's text answer.
type Client interface {
	// Complete sends a system prompt and a user prompt and returns the answer text.
	Complete(ctx context.Context, system, prompt string) (string, error)
	// Name is "anthropic/<model>" or "openai/<model>", for traces and /api/about.
	Name() string
}

// Providers.
const (
	ProviderAnthropic = "anthropic"
	ProviderOpenAI    = "openai" // any OpenAI-compatible chat-completions endpoint
)

// Defaults.
const (
	DefaultAnthropicModel = "claude-sonnet-4-5"
	DefaultOpenAIModel    = "gpt-4o-mini"
	DefaultTimeout        = 20 * time.Second
	DefaultMaxTokens      = 2048
)

// Config says which model to call. APIKey is a secret: Config's String hides it.
type Config struct {
	Provider  string
	BaseURL   string // Anthropic: API root (the client appends /v1/messages; default DefaultAnthropicBaseURL); OpenAI: the /v1 root
	APIKey    string
	Model     string
	Timeout   time.Duration
	MaxTokens int
}

// String describes the config without the key.
func (c Config) String() string {
	key := "unset"
	if c.APIKey != "" {
		key = "set"
	}
	return fmt.Sprintf("llm{provider=%s model=%s base_url=%s key=%s timeout=%s}", c.Provider, c.Model, c.BaseURL, key, c.Timeout)
}

// ErrNotConfigured means no LLM is configured; callers use heuristics.
var ErrNotConfigured = errors.New("no LLM configured (set ANTHROPIC_API_KEY, or MOSAIC_LLM_BASE_URL and MOSAIC_LLM_API_KEY)")

// ConfigFromEnv reads the configuration from the environment through getenv (os.Getenv
// in production):
//
//   - MOSAIC_LLM_BASE_URL (+ MOSAIC_LLM_API_KEY, optional for local servers): an
//     OpenAI-compatible endpoint such as https://api.openai.com/v1. Takes precedence.
//   - ANTHROPIC_API_KEY (+ optional ANTHROPIC_BASE_URL): the Anthropic Messages API.
//   - MOSAIC_LLM_MODEL: model name (defaults above); MOSAIC_LLM_TIMEOUT: e.g. "30s".
//
// It returns ErrNotConfigured when neither is set, and an error for a bad timeout.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	cfg := Config{Model: strings.TrimSpace(getenv("MOSAIC_LLM_MODEL")), Timeout: DefaultTimeout, MaxTokens: DefaultMaxTokens}
	if t := strings.TrimSpace(getenv("MOSAIC_LLM_TIMEOUT")); t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || d <= 0 {
			return Config{}, fmt.Errorf("MOSAIC_LLM_TIMEOUT=%q: want a positive duration such as 30s", t)
		}
		cfg.Timeout = d
	}
	if base := strings.TrimSpace(getenv("MOSAIC_LLM_BASE_URL")); base != "" {
		cfg.Provider, cfg.BaseURL, cfg.APIKey = ProviderOpenAI, base, strings.TrimSpace(getenv("MOSAIC_LLM_API_KEY"))
		if cfg.Model == "" {
			cfg.Model = DefaultOpenAIModel
		}
		return cfg, nil
	}
	if key := strings.TrimSpace(getenv("ANTHROPIC_API_KEY")); key != "" {
		cfg.Provider, cfg.APIKey, cfg.BaseURL = ProviderAnthropic, key, strings.TrimSpace(getenv("ANTHROPIC_BASE_URL"))
		if cfg.Model == "" {
			cfg.Model = DefaultAnthropicModel
		}
		return cfg, nil
	}
	return Config{}, ErrNotConfigured
}

// New builds the client for cfg.
func New(cfg Config) (Client, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	switch cfg.Provider {
	case ProviderAnthropic:
		if cfg.APIKey == "" {
			return nil, fmt.Errorf("anthropic: no API key; set ANTHROPIC_API_KEY")
		}
		if cfg.Model == "" {
			cfg.Model = DefaultAnthropicModel
		}
		return newAnthropic(cfg), nil
	case ProviderOpenAI:
		if cfg.BaseURL == "" {
			return nil, fmt.Errorf("openai-compatible: no base URL; set MOSAIC_LLM_BASE_URL")
		}
		if cfg.Model == "" {
			cfg.Model = DefaultOpenAIModel
		}
		return newOpenAI(cfg), nil
	}
	return nil, fmt.Errorf("llm provider %q: want %s or %s", cfg.Provider, ProviderAnthropic, ProviderOpenAI)
}

// FromEnv is ConfigFromEnv followed by New.
func FromEnv(getenv func(string) string) (Client, error) {
	cfg, err := ConfigFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	return New(cfg)
}

// ExtractJSON returns the first balanced JSON object in an answer, skipping prose and
// ``` fences around it. It respects strings, so braces inside them do not count.
func ExtractJSON(text string) (string, error) {
	start := strings.IndexByte(text, '{')
	if start < 0 {
		return "", fmt.Errorf("answer contains no JSON object")
	}
	depth, inStr, esc := 0, false, false
	for i := start; i < len(text); i++ {
		ch := text[i]
		switch {
		case esc:
			esc = false
		case inStr && ch == '\\':
			esc = true
		case ch == '"':
			inStr = !inStr
		case inStr:
		case ch == '{':
			depth++
		case ch == '}':
			depth--
			if depth == 0 {
				return text[start : i+1], nil
			}
		}
	}
	return "", fmt.Errorf("answer's JSON object is not closed")
}

// redact removes the key from s (defence in depth for error texts).
func redact(s, key string) string {
	if key == "" || len(key) < 4 {
		return s
	}
	return strings.ReplaceAll(s, key, "[redacted]")
}
