package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Anthropic Messages API, spoken directly over net/http (it replaced
// github.com/anthropics/anthropic-sdk-go, which was 7 MB of the release binary for one
// call). Wire format, from Anthropic's API reference:
//
//   - https://docs.anthropic.com/en/api/messages — POST {base}/v1/messages with headers
//     x-api-key, anthropic-version and content-type: application/json; request
//     {model, max_tokens, system, messages:[{role:"user", content:[{type:"text", text}]}]};
//     response {id, type:"message", role:"assistant", content:[{type:"text", text}, ...],
//     model, stop_reason, stop_sequence, usage}.
//   - https://docs.anthropic.com/en/api/versioning — anthropic-version: 2023-06-01.
//   - https://docs.anthropic.com/en/api/errors — an error is {"type":"error","error":
//     {"type":..., "message":...}, "request_id":...}; 429 rate_limit_error (with a
//     retry-after header) and 529 overloaded_error are transient, as are 5xx.
const (
	// DefaultAnthropicBaseURL is the API root used when ANTHROPIC_BASE_URL is unset.
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
	anthropicVersion        = "2023-06-01"
	// anthropicMaxAttempts bounds the retries of a transient failure (429, 529, 5xx, a
	// dropped connection): the first try and two more, all inside Config.Timeout.
	anthropicMaxAttempts = 3
	// anthropicMaxBody bounds how much of an answer is read.
	anthropicMaxBody = 4 << 20
)

// anthropicBackoff is the wait before retry n (1, 2, ...) when the server did not say
// how long to wait: 500 ms doubled each time, capped at 8 s, minus up to 25 % jitter.
func anthropicBackoff(n int) time.Duration {
	d := 500 * time.Millisecond << (n - 1)
	if d > 8*time.Second || d <= 0 {
		d = 8 * time.Second
	}
	return d - time.Duration(rand.Int64N(int64(d)/4+1))
}

// anthropicClient calls POST {base}/v1/messages.
type anthropicClient struct {
	cfg  Config
	url  string
	http *http.Client
}

func newAnthropic(cfg Config) *anthropicClient {
	base := cfg.BaseURL
	if base == "" {
		base = DefaultAnthropicBaseURL
	}
	// No http.Client timeout: Complete's context carries Config.Timeout over all attempts.
	return &anthropicClient{cfg: cfg, url: strings.TrimRight(base, "/") + "/v1/messages", http: &http.Client{}}
}

func (a *anthropicClient) Name() string { return ProviderAnthropic + "/" + a.cfg.Model }

type anthropicText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type anthropicMessage struct {
	Role    string          `json:"role"`
	Content []anthropicText `json:"content"`
}

type anthropicRequest struct {
	Model     string             `json:"model"`
	MaxTokens int                `json:"max_tokens"`
	System    string             `json:"system,omitempty"`
	Messages  []anthropicMessage `json:"messages"`
}

// APIError is an error answer of the Anthropic Messages API (an HTTP status with the
// documented error body). Its text never contains the API key.
type APIError struct {
	Status    int    // HTTP status
	Type      string // error.type, e.g. "overloaded_error"; "" when the body was not the documented shape
	Message   string // error.message (or the start of a non-JSON body), at most 300 bytes
	RequestID string // request_id, for Anthropic support
	Code      string // error.details.error_code when present, e.g. "enforced_spend_limit_reached"
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %d", e.Status)
	if e.Type != "" {
		b.WriteString(" " + e.Type)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.RequestID != "" {
		b.WriteString(" (request " + e.RequestID + ")")
	}
	if hint := e.hint(); hint != "" {
		b.WriteString("; " + hint)
	}
	return b.String()
}

// hint says what the user can do about the error.
func (e *APIError) hint() string {
	switch {
	case e.Status == http.StatusUnauthorized:
		return "check ANTHROPIC_API_KEY"
	case e.Status == http.StatusForbidden:
		return "the API key may not use this model; check MOSAIC_LLM_MODEL or the key's permissions"
	case e.Status == http.StatusNotFound:
		return "check MOSAIC_LLM_MODEL and ANTHROPIC_BASE_URL"
	case e.Code == "enforced_spend_limit_reached":
		return "the organisation's spend limit is reached; raise it in the Anthropic console"
	case e.Status == http.StatusTooManyRequests:
		return "rate limited; wait, or raise the organisation's rate limits"
	case e.Status == 529 || e.Status >= 500:
		return "the API is overloaded or failing; try again later"
	}
	return ""
}

// transient reports whether the same request may succeed if sent again.
func (e *APIError) transient() bool {
	if e.Code == "enforced_spend_limit_reached" {
		return false // does not clear until the next month or a higher tier
	}
	return e.Status == http.StatusRequestTimeout || e.Status == http.StatusConflict ||
		e.Status == http.StatusTooManyRequests || e.Status >= 500
}

// parseAnthropicError reads an error answer; a body that is not the documented shape
// (a proxy's HTML page, say) becomes the message, trimmed.
func parseAnthropicError(status int, raw []byte) *APIError {
	e := &APIError{Status: status}
	var body struct {
		Type  string `json:"type"`
		Error *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
			Details *struct {
				ErrorCode string `json:"error_code"`
			} `json:"details"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}
	if json.Unmarshal(raw, &body) == nil && body.Error != nil {
		e.Type, e.Message, e.RequestID = body.Error.Type, body.Error.Message, body.RequestID
		if body.Error.Details != nil {
			e.Code = body.Error.Details.ErrorCode
		}
	} else {
		e.Message = strings.TrimSpace(string(raw))
	}
	e.Message = truncate(e.Message, 300)
	e.Type, e.RequestID, e.Code = truncate(e.Type, 64), truncate(e.RequestID, 128), truncate(e.Code, 64)
	return e
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// parseAnthropicMessage reads a 200 answer and returns its text: the text blocks of
// content, joined (other blocks, e.g. thinking or tool_use, are skipped). It fails on
// anything that is not a Messages API message, and on a message without text.
func parseAnthropicMessage(raw []byte) (string, error) {
	var msg struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StopReason *string `json:"stop_reason"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil {
		return "", fmt.Errorf("the answer is not Messages API JSON (%.60q): %w", raw, err)
	}
	if msg.Type == "error" {
		return "", parseAnthropicError(http.StatusOK, raw)
	}
	if msg.Type != "message" || msg.Role != "assistant" {
		return "", fmt.Errorf("the answer is not a Messages API message (type %.40q, role %.40q); is ANTHROPIC_BASE_URL an Anthropic endpoint?", msg.Type, msg.Role)
	}
	var b strings.Builder
	for _, blk := range msg.Content {
		if blk.Type == "text" {
			b.WriteString(blk.Text)
		}
	}
	if b.Len() == 0 {
		stop := "null"
		if msg.StopReason != nil {
			stop = truncate(*msg.StopReason, 40)
		}
		return "", fmt.Errorf("the answer has no text (stop_reason %s)", stop)
	}
	return b.String(), nil
}

// retryAfter reads the server's requested wait: retry-after-ms, or retry-after in
// seconds or as an HTTP date. ok is false when neither is present and readable.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms >= 0 && ms < 1e9 {
		return time.Duration(ms * float64(time.Millisecond)), true
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 && s < 1e6 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

func (a *anthropicClient) Complete(ctx context.Context, system, prompt string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	body, err := json.Marshal(anthropicRequest{
		Model: a.cfg.Model, MaxTokens: a.cfg.MaxTokens, System: system,
		Messages: []anthropicMessage{{Role: "user", Content: []anthropicText{{Type: "text", Text: prompt}}}},
	})
	if err != nil {
		return "", fmt.Errorf("anthropic %s: encode request: %w", a.cfg.Model, err)
	}
	for attempt := 1; ; attempt++ {
		text, r, err := a.try(ctx, body)
		if err == nil {
			return text, nil
		}
		if !r.retry || attempt >= anthropicMaxAttempts || ctx.Err() != nil {
			return "", a.fail(ctx, err, attempt)
		}
		wait := anthropicBackoff(attempt)
		if r.asked {
			wait = r.after
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return "", a.fail(ctx, fmt.Errorf("%w; not retried: waiting %s would pass the %s timeout (MOSAIC_LLM_TIMEOUT)",
				err, wait.Round(time.Millisecond), a.cfg.Timeout), attempt)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", a.fail(ctx, err, attempt)
		case <-t.C:
		}
	}
}

// retryHint is try's verdict on a failure: whether to retry, and the wait the server
// asked for (asked false: none, use the backoff).
type retryHint struct {
	retry, asked bool
	after        time.Duration
}

// try sends one request.
func (a *anthropicClient) try(ctx context.Context, body []byte) (string, retryHint, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url, bytes.NewReader(body))
	if err != nil {
		return "", retryHint{}, fmt.Errorf("ANTHROPIC_BASE_URL %q: %w", a.url, err)
	}
	req.Header.Set("X-Api-Key", a.cfg.APIKey)
	req.Header.Set("Anthropic-Version", anthropicVersion)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := a.http.Do(req)
	if err != nil {
		return "", retryHint{retry: true}, err // a refused or dropped connection may clear
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, anthropicMaxBody))
	if err != nil {
		return "", retryHint{retry: true}, fmt.Errorf("read the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		apiErr := parseAnthropicError(resp.StatusCode, raw)
		h := retryHint{retry: apiErr.transient()}
		switch resp.Header.Get("X-Should-Retry") { // the API's own verdict wins when given
		case "true":
			h.retry = true
		case "false":
			h.retry = false
		}
		h.after, h.asked = retryAfter(resp.Header, time.Now())
		return "", h, apiErr
	}
	text, err := parseAnthropicMessage(raw)
	return text, retryHint{}, err
}

// fail words the final error: the model, the attempts, the timeout when it was the
// cause, and never the key.
func (a *anthropicClient) fail(ctx context.Context, err error, attempts int) error {
	prefix := "anthropic " + a.cfg.Model
	if attempts > 1 {
		prefix += fmt.Sprintf(" (%d attempts)", attempts)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("no answer before the deadline (the LLM timeout is %s; MOSAIC_LLM_TIMEOUT sets it): %w", a.cfg.Timeout, err)
	}
	if len(a.cfg.APIKey) >= 4 && strings.Contains(err.Error(), a.cfg.APIKey) {
		return fmt.Errorf("%s: %s", prefix, redact(err.Error(), a.cfg.APIKey)) // defence in depth: drop the chain rather than leak
	}
	return fmt.Errorf("%s: %w", prefix, err)
}
