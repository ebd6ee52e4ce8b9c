package llm_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/scheduler/llm"
	"github.com/mosaic-hpc/mosaic/internal/scheduler/llm/llmtest"
)

func anthropicClient(t *testing.T, url string, timeout time.Duration) llm.Client {
	t.Helper()
	c, err := llm.New(llm.Config{Provider: llm.ProviderAnthropic, APIKey: llmtest.Key, Model: "test-model", Timeout: timeout, BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The client retries what the API documents as transient (429, 529, 5xx), at most
// three attempts, honours retry-after, and does not retry the rest.
func TestAnthropicRetries(t *testing.T) {
	overloaded := llmtest.Failure{Status: 529, Type: "overloaded_error", Header: map[string]string{"Retry-After": "0"}}
	cases := []struct {
		name     string
		fail     []llmtest.Failure
		ok       bool
		requests int64
		err      string
	}{
		{name: "529 then success", fail: []llmtest.Failure{overloaded}, ok: true, requests: 2},
		{name: "429 and 500 then success", fail: []llmtest.Failure{
			{Status: 429, Type: "rate_limit_error", Header: map[string]string{"Retry-After-Ms": "20"}},
			{Status: 500, Type: "api_error", Header: map[string]string{"Retry-After": "0"}}}, ok: true, requests: 3},
		{name: "always overloaded: three attempts", fail: []llmtest.Failure{overloaded, overloaded, overloaded, overloaded}, requests: 3,
			err: "(3 attempts): HTTP 529 overloaded_error"},
		{name: "a proxy's 502 page is retried", fail: []llmtest.Failure{{Status: 502, Body: "<html>bad gateway</html>", Header: map[string]string{"Retry-After": "0"}}}, ok: true, requests: 2},
		{name: "400 is not retried", fail: []llmtest.Failure{{Status: 400, Type: "invalid_request_error"}}, requests: 1,
			err: "anthropic test-model: HTTP 400 invalid_request_error: fake failure 1 (request req_fake01)"},
		{name: "spend limit is not retried", fail: []llmtest.Failure{{Status: 429,
			Body: `{"type":"error","error":{"type":"rate_limit_error","message":"cap","details":{"error_code":"enforced_spend_limit_reached"}}}`}},
			requests: 1, err: "spend limit"},
		{name: "x-should-retry false wins", fail: []llmtest.Failure{{Status: 529, Type: "overloaded_error", Header: map[string]string{"X-Should-Retry": "false"}}}, requests: 1, err: "HTTP 529"},
		{name: "x-should-retry true wins", fail: []llmtest.Failure{{Status: 400, Type: "invalid_request_error", Header: map[string]string{"X-Should-Retry": "true", "Retry-After": "0"}}}, ok: true, requests: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int64
			srv := llmtest.Anthropic(t, llmtest.Reply{Text: "fine", Fail: tc.fail, Requests: &n})
			got, err := anthropicClient(t, srv.URL, 5*time.Second).Complete(context.Background(), "sys", "prompt")
			if tc.ok != (err == nil) || (tc.ok && got != "fine") || (!tc.ok && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("Complete = %q, %v; want ok=%v err containing %q", got, err, tc.ok, tc.err)
			}
			if n.Load() != tc.requests {
				t.Errorf("%d requests, want %d", n.Load(), tc.requests)
			}
			var apiErr *llm.APIError
			if !tc.ok && !errors.As(err, &apiErr) {
				t.Errorf("error %v does not wrap an *llm.APIError", err)
			}
		})
	}
}

// retry-after is waited for (not less), and a wait past the timeout is not started:
// the caller gets the error at once and falls back to its heuristics.
func TestAnthropicRetryAfter(t *testing.T) {
	var n atomic.Int64
	srv := llmtest.Anthropic(t, llmtest.Reply{Text: "late but fine", Requests: &n,
		Fail: []llmtest.Failure{{Status: 429, Type: "rate_limit_error", Header: map[string]string{"Retry-After": "1"}}}})
	start := time.Now()
	got, err := anthropicClient(t, srv.URL, 5*time.Second).Complete(context.Background(), "", "prompt")
	if err != nil || got != "late but fine" {
		t.Fatalf("Complete = %q, %v", got, err)
	}
	if el := time.Since(start); el < time.Second || el > 4*time.Second {
		t.Errorf("took %s; retry-after: 1 asks for one second", el)
	}

	n.Store(0)
	srv = llmtest.Anthropic(t, llmtest.Reply{Text: "never", Requests: &n,
		Fail: []llmtest.Failure{{Status: 529, Type: "overloaded_error", Header: map[string]string{"Retry-After": "30"}}}})
	start = time.Now()
	_, err = anthropicClient(t, srv.URL, 2*time.Second).Complete(context.Background(), "", "prompt")
	if err == nil || !strings.Contains(err.Error(), "not retried: waiting 30s would pass the 2s timeout") {
		t.Fatalf("want a not-retried error naming the wait and the timeout, got %v", err)
	}
	if el := time.Since(start); el > time.Second || n.Load() != 1 {
		t.Errorf("took %s with %d requests; a wait past the deadline must not be started", el, n.Load())
	}
}

// Without retry-after the backoff (about 0.5 s, then 1 s) still stays inside the
// timeout: a short timeout ends the retries with a timeout error.
func TestAnthropicBackoffStopsAtTimeout(t *testing.T) {
	var n atomic.Int64
	f := llmtest.Failure{Status: 503, Type: "api_error"}
	srv := llmtest.Anthropic(t, llmtest.Reply{Text: "x", Requests: &n, Fail: []llmtest.Failure{f, f, f}})
	start := time.Now()
	_, err := anthropicClient(t, srv.URL, 300*time.Millisecond).Complete(context.Background(), "", "prompt")
	if err == nil || !strings.Contains(err.Error(), "HTTP 503") || !strings.Contains(err.Error(), "MOSAIC_LLM_TIMEOUT") {
		t.Fatalf("want the 503 with a timeout hint, got %v", err)
	}
	if el := time.Since(start); el > 2*time.Second || n.Load() != 1 {
		t.Errorf("took %s with %d requests; want one request and a prompt error", el, n.Load())
	}
}

// A 200 that is not a Messages API message is an error saying so, not an empty answer.
func TestAnthropicMalformedAnswer(t *testing.T) {
	for raw, want := range map[string]string{
		`{"type":"message","role":"assistant","content":[]}`: "no text",
		`{"choices":[{"message":{"content":"x"}}]}`:          "not a Messages API message",
		`{"type":"message","role":"assist`:                   "not Messages API JSON",
	} {
		srv := llmtest.Anthropic(t, llmtest.Reply{Raw: raw})
		_, err := anthropicClient(t, srv.URL, 2*time.Second).Complete(context.Background(), "", "prompt")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("answer %s: err %v, want %q", raw, err, want)
		}
	}
}

// The documented headers and body are what the client sends: the fake refuses anything
// else (x-api-key only, anthropic-version 2023-06-01, JSON with model, max_tokens and a
// user text block), and the system prompt reaches the server.
func TestAnthropicRequestShape(t *testing.T) {
	srv := llmtest.Anthropic(t, llmtest.Reply{Text: "ok", MustContain: `"system":"be brief"`})
	got, err := anthropicClient(t, srv.URL+"/", 2*time.Second).Complete(context.Background(), "be brief", "prompt")
	if err != nil || got != "ok" {
		t.Fatalf("Complete = %q, %v (a trailing slash on the base URL must work too)", got, err)
	}
	// The key never appears in errors, even when the server echoes it.
	echo := llmtest.Anthropic(t, llmtest.Reply{Fail: []llmtest.Failure{{Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"bad key ` + llmtest.Key + `"}}`}}})
	_, err = anthropicClient(t, echo.URL, 2*time.Second).Complete(context.Background(), "", "prompt")
	if err == nil || strings.Contains(err.Error(), llmtest.Key) || !strings.Contains(err.Error(), "[redacted]") {
		t.Fatalf("echoed key: err %v (must be redacted)", err)
	}
	// An unreachable server is retried, then reported with the attempts.
	dead := llmtest.Anthropic(t, llmtest.Reply{})
	dead.Close()
	_, err = anthropicClient(t, dead.URL, 5*time.Second).Complete(context.Background(), "", "prompt")
	if err == nil || !strings.Contains(err.Error(), "(3 attempts)") || !strings.Contains(err.Error(), "connect") {
		t.Fatalf("dead server: %v", err)
	}
	if _, ok := errors.AsType[*llm.APIError](err); ok {
		t.Errorf("a connection error is not an APIError: %v", err)
	}
}
