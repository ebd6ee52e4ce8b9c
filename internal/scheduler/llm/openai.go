package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// openAIClient calls POST {base}/chat/completions of any OpenAI-compatible server.
// Wire format: https://platform.openai.com/docs/api-reference/chat/create (request
// {model, messages:[{role, content}], temperature}; response {choices:[{message:{role,
// content}}]}).
type openAIClient struct {
	cfg  Config
	http *http.Client
}

func newOpenAI(cfg Config) *openAIClient {
	return &openAIClient{cfg: cfg, http: &http.Client{Timeout: cfg.Timeout}}
}

func (o *openAIClient) Name() string { return ProviderOpenAI + "/" + o.cfg.Model }

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model       string        `json:"model"`
	Messages    []chatMessage `json:"messages"`
	Temperature float64       `json:"temperature"`
	MaxTokens   int           `json:"max_tokens,omitempty"`
}

type chatResponse struct {
	Choices []struct {
		Message chatMessage `json:"message"`
	} `json:"choices"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

func (o *openAIClient) Complete(ctx context.Context, system, prompt string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, o.cfg.Timeout)
	defer cancel()
	req := chatRequest{Model: o.cfg.Model, Temperature: 0, MaxTokens: o.cfg.MaxTokens}
	if system != "" {
		req.Messages = append(req.Messages, chatMessage{Role: "system", Content: system})
	}
	req.Messages = append(req.Messages, chatMessage{Role: "user", Content: prompt})
	body, err := json.Marshal(req)
	if err != nil {
		return "", fmt.Errorf("openai-compatible: encode request: %w", err)
	}
	url := strings.TrimRight(o.cfg.BaseURL, "/") + "/chat/completions"
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("openai-compatible %s: %w", url, err)
	}
	hr.Header.Set("Content-Type", "application/json")
	if o.cfg.APIKey != "" {
		hr.Header.Set("Authorization", "Bearer "+o.cfg.APIKey)
	}
	resp, err := o.http.Do(hr)
	if err != nil {
		return "", fmt.Errorf("openai-compatible %s: %s", url, redact(err.Error(), o.cfg.APIKey))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return "", fmt.Errorf("openai-compatible %s: read answer: %w", url, err)
	}
	var cr chatResponse
	jerr := json.Unmarshal(raw, &cr)
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(raw))
		if jerr == nil && cr.Error != nil {
			msg = cr.Error.Message
		}
		if len(msg) > 300 {
			msg = msg[:300]
		}
		return "", fmt.Errorf("openai-compatible %s: HTTP %d: %s", url, resp.StatusCode, redact(msg, o.cfg.APIKey))
	}
	if jerr != nil {
		return "", fmt.Errorf("openai-compatible %s: answer is not chat-completions JSON: %w", url, jerr)
	}
	if len(cr.Choices) == 0 || cr.Choices[0].Message.Content == "" {
		return "", fmt.Errorf("openai-compatible %s: answer has no choices", url)
	}
	return cr.Choices[0].Message.Content, nil
}
