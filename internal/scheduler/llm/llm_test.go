package llm_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/scheduler/llm"
	"github.com/mosaic-hpc/mosaic/internal/scheduler/llm/llmtest"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestConfigFromEnv(t *testing.T) {
	cases := []struct {
		name     string
		vars     map[string]string
		provider string
		model    string
		timeout  time.Duration
		err      string
	}{
		{name: "nothing", vars: nil, err: "no LLM configured"},
		{name: "anthropic", vars: map[string]string{"ANTHROPIC_API_KEY": "k"}, provider: llm.ProviderAnthropic, model: llm.DefaultAnthropicModel, timeout: llm.DefaultTimeout},
		{name: "anthropic model and timeout", vars: map[string]string{"ANTHROPIC_API_KEY": "k", "MOSAIC_LLM_MODEL": "claude-x", "MOSAIC_LLM_TIMEOUT": "5s"},
			provider: llm.ProviderAnthropic, model: "claude-x", timeout: 5 * time.Second},
		{name: "openai wins", vars: map[string]string{"ANTHROPIC_API_KEY": "k", "MOSAIC_LLM_BASE_URL": "http://127.0.0.1:1/v1", "MOSAIC_LLM_API_KEY": "o"},
			provider: llm.ProviderOpenAI, model: llm.DefaultOpenAIModel, timeout: llm.DefaultTimeout},
		{name: "bad timeout", vars: map[string]string{"ANTHROPIC_API_KEY": "k", "MOSAIC_LLM_TIMEOUT": "soon"}, err: "MOSAIC_LLM_TIMEOUT"},
		{name: "negative timeout", vars: map[string]string{"ANTHROPIC_API_KEY": "k", "MOSAIC_LLM_TIMEOUT": "-1s"}, err: "MOSAIC_LLM_TIMEOUT"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := llm.ConfigFromEnv(env(tc.vars))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("want error %q, got %v", tc.err, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Provider != tc.provider || cfg.Model != tc.model || cfg.Timeout != tc.timeout {
				t.Errorf("got %s", cfg)
			}
		})
	}
	if _, err := llm.ConfigFromEnv(env(nil)); !errors.Is(err, llm.ErrNotConfigured) {
		t.Errorf("want ErrNotConfigured, got %v", err)
	}
}

func TestConfigStringHidesKey(t *testing.T) {
	cfg := llm.Config{Provider: llm.ProviderAnthropic, APIKey: "sk-very-secret", Model: "m"}
	if s := cfg.String(); strings.Contains(s, "sk-very-secret") || !strings.Contains(s, "key=set") {
		t.Errorf("String leaks or hides wrongly: %s", s)
	}
}

func TestNewErrors(t *testing.T) {
	for _, cfg := range []llm.Config{{}, {Provider: "bard"}, {Provider: llm.ProviderAnthropic}, {Provider: llm.ProviderOpenAI}} {
		if _, err := llm.New(cfg); err == nil {
			t.Errorf("New(%s) accepted", cfg)
		}
	}
}

func client(t *testing.T, provider, url, key string) llm.Client {
	t.Helper()
	cfg := llm.Config{Provider: provider, APIKey: key, Model: "test-model", Timeout: 2 * time.Second, BaseURL: url}
	if provider == llm.ProviderOpenAI {
		cfg.BaseURL = url + "/v1"
	}
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCompleteBothWireFormats(t *testing.T) {
	for _, p := range []string{llm.ProviderAnthropic, llm.ProviderOpenAI} {
		t.Run(p, func(t *testing.T) {
			var url string
			if p == llm.ProviderAnthropic {
				url = llmtest.Anthropic(t, llmtest.Reply{Text: "hello", MustContain: "the prompt"}).URL
			} else {
				url = llmtest.OpenAI(t, llmtest.Reply{Text: "hello", MustContain: "the prompt"}).URL
			}
			c := client(t, p, url, llmtest.Key)
			got, err := c.Complete(context.Background(), "sys", "the prompt")
			if err != nil || got != "hello" {
				t.Fatalf("Complete = %q, %v", got, err)
			}
			if c.Name() != p+"/test-model" {
				t.Errorf("Name %q", c.Name())
			}
			// A wrong key is an error that does not contain the key.
			bad := client(t, p, url, "sk-wrong-key-123")
			_, err = bad.Complete(context.Background(), "sys", "the prompt")
			if err == nil || strings.Contains(err.Error(), "sk-wrong-key-123") {
				t.Errorf("wrong key: err %v (must fail without quoting the key)", err)
			}
		})
	}
}

func TestCompleteTimeout(t *testing.T) {
	for _, p := range []string{llm.ProviderAnthropic, llm.ProviderOpenAI} {
		t.Run(p, func(t *testing.T) {
			var url string
			if p == llm.ProviderAnthropic {
				url = llmtest.Anthropic(t, llmtest.Reply{Text: "late", Delay: 5 * time.Second}).URL
			} else {
				url = llmtest.OpenAI(t, llmtest.Reply{Text: "late", Delay: 5 * time.Second}).URL
			}
			c := client(t, p, url, llmtest.Key)
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			start := time.Now()
			if _, err := c.Complete(ctx, "", "x"); err == nil {
				t.Fatal("want a timeout error")
			}
			if el := time.Since(start); el > 3*time.Second {
				t.Errorf("took %s; the context deadline was not honoured", el)
			}
		})
	}
}

func TestExtractJSON(t *testing.T) {
	cases := []struct{ in, want, err string }{
		{in: `{"a":1}`, want: `{"a":1}`},
		{in: "Sure:\n```json\n{\"a\":{\"b\":2}}\n```\nDone.", want: `{"a":{"b":2}}`},
		{in: `{"s":"a } brace","t":"q\"}"} trailing {"x":1}`, want: `{"s":"a } brace","t":"q\"}"}`},
		{in: `no json here`, err: "no JSON object"},
		{in: `{"open": [1,2`, err: "not closed"},
		{in: ``, err: "no JSON object"},
	}
	for _, tc := range cases {
		got, err := llm.ExtractJSON(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ExtractJSON(%q) err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ExtractJSON(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// FuzzExtractJSON: never panics; an extracted object starts with { and ends with } and
// is a substring of the input.
func FuzzExtractJSON(f *testing.F) {
	f.Add("```json\n{\"order\":[{\"id\":\"a/b/c\",\"reason\":\"x\"}]}\n```")
	f.Add(`{"s":"\"}{"}`)
	f.Add(`}{`)
	f.Fuzz(func(t *testing.T, in string) {
		got, err := llm.ExtractJSON(in)
		if err != nil {
			return
		}
		if !strings.HasPrefix(got, "{") || !strings.HasSuffix(got, "}") || !strings.Contains(in, got) {
			t.Fatalf("ExtractJSON(%q) = %q", in, got)
		}
	})
}
