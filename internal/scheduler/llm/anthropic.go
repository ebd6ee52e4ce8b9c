package llm

import (
	"context"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// anthropicClient calls POST {base}/v1/messages through the official SDK. Wire format:
// https://docs.anthropic.com/en/api/messages (request {model, max_tokens, system,
// messages:[{role:"user", content:[{type:"text", text}]}]}; response {id, type:"message",
// role:"assistant", content:[{type:"text", text}], model, stop_reason, usage}).
type anthropicClient struct {
	cfg Config
	c   anthropic.Client
}

func newAnthropic(cfg Config) *anthropicClient {
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(), // the config already read the environment
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0), // the caller falls back to heuristics instead of waiting
		option.WithRequestTimeout(cfg.Timeout),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	return &anthropicClient{cfg: cfg, c: anthropic.NewClient(opts...)}
}

func (a *anthropicClient) Name() string { return ProviderAnthropic + "/" + a.cfg.Model }

func (a *anthropicClient) Complete(ctx context.Context, system, prompt string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	params := anthropic.MessageNewParams{
		Model:     a.cfg.Model,
		MaxTokens: int64(a.cfg.MaxTokens),
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
	}
	if system != "" {
		params.System = []anthropic.TextBlockParam{{Text: system}}
	}
	msg, err := a.c.Messages.New(ctx, params)
	if err != nil {
		return "", fmt.Errorf("anthropic %s: %s", a.cfg.Model, redact(err.Error(), a.cfg.APIKey))
	}
	var b strings.Builder
	for _, blk := range msg.Content {
		if blk.Type == "text" {
			b.WriteString(blk.Text)
		}
	}
	if b.Len() == 0 {
		return "", fmt.Errorf("anthropic %s: the answer has no text (stop_reason %s)", a.cfg.Model, msg.StopReason)
	}
	return b.String(), nil
}
