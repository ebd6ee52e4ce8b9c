package llm

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The Messages API answers the client must read, and the malformed ones it must refuse
// with a clear error (shapes from https://docs.anthropic.com/en/api/messages and
// https://docs.anthropic.com/en/api/errors).
func TestParseAnthropicMessage(t *testing.T) {
	cases := []struct{ name, raw, want, err string }{
		{name: "one text block", raw: `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"model":"m","stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`, want: "hi"},
		{name: "text blocks joined, others skipped", raw: `{"type":"message","role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"a"},{"type":"tool_use","id":"t","name":"x","input":{}},{"type":"text","text":"b"}]}`, want: "ab"},
		{name: "unknown fields ignored", raw: `{"type":"message","role":"assistant","content":[{"type":"text","text":"x","citations":null}],"container":null,"new_field":[1,2]}`, want: "x"},
		{name: "max_tokens still returns the text", raw: `{"type":"message","role":"assistant","content":[{"type":"text","text":"{\"a\":"}],"stop_reason":"max_tokens"}`, want: `{"a":`},
		{name: "empty body", raw: ``, err: "not Messages API JSON"},
		{name: "not json", raw: `<html>502 Bad Gateway</html>`, err: "not Messages API JSON"},
		{name: "truncated json", raw: `{"type":"message","role":"assistant","content":[{"type":"text","te`, err: "not Messages API JSON"},
		{name: "json array", raw: `[{"type":"text","text":"x"}]`, err: "not Messages API JSON"},
		{name: "json null", raw: `null`, err: "not a Messages API message"},
		{name: "wrong type", raw: `{"type":"completion","completion":"x"}`, err: "not a Messages API message"},
		{name: "chat-completions answer", raw: `{"object":"chat.completion","choices":[{"message":{"role":"assistant","content":"x"}}]}`, err: "is ANTHROPIC_BASE_URL an Anthropic endpoint"},
		{name: "wrong role", raw: `{"type":"message","role":"user","content":[{"type":"text","text":"x"}]}`, err: "not a Messages API message"},
		{name: "content not a list", raw: `{"type":"message","role":"assistant","content":"x"}`, err: "not Messages API JSON"},
		{name: "text not a string", raw: `{"type":"message","role":"assistant","content":[{"type":"text","text":7}]}`, err: "not Messages API JSON"},
		{name: "no content", raw: `{"type":"message","role":"assistant","content":[],"stop_reason":"refusal"}`, err: "no text (stop_reason refusal)"},
		{name: "only tool use", raw: `{"type":"message","role":"assistant","content":[{"type":"tool_use","id":"t","name":"x","input":{}}],"stop_reason":"tool_use"}`, err: "no text (stop_reason tool_use)"},
		{name: "null stop reason", raw: `{"type":"message","role":"assistant","content":null,"stop_reason":null}`, err: "no text (stop_reason null)"},
		{name: "error body with 200", raw: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, err: "overloaded_error: Overloaded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseAnthropicMessage([]byte(tc.raw))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %q, %v; want error containing %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestParseAnthropicError(t *testing.T) {
	cases := []struct {
		name      string
		status    int
		raw       string
		typ, text string
		transient bool
	}{
		{name: "documented overloaded", status: 529, raw: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_9"}`,
			typ: "overloaded_error", text: "HTTP 529 overloaded_error: Overloaded (request req_9); the API is overloaded", transient: true},
		{name: "rate limit", status: 429, raw: `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`,
			typ: "rate_limit_error", text: "rate limited", transient: true},
		{name: "spend limit is not transient", status: 429, raw: `{"type":"error","error":{"type":"rate_limit_error","message":"cap","details":{"error_code":"enforced_spend_limit_reached"}}}`,
			typ: "rate_limit_error", text: "spend limit", transient: false},
		{name: "auth", status: 401, raw: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`,
			typ: "authentication_error", text: "check ANTHROPIC_API_KEY", transient: false},
		{name: "bad request", status: 400, raw: `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: required"}}`,
			typ: "invalid_request_error", text: "max_tokens: required", transient: false},
		{name: "html from a proxy", status: 502, raw: "<html>Bad Gateway</html>\n", text: "HTTP 502: <html>Bad Gateway</html>", transient: true},
		{name: "error is a string", status: 500, raw: `{"type":"error","error":"boom"}`, text: `HTTP 500: {"type":"error","error":"boom"}`, transient: true},
		{name: "empty", status: 503, raw: ``, text: "HTTP 503; the API", transient: true},
		{name: "long message cut", status: 400, raw: `{"type":"error","error":{"type":"invalid_request_error","message":"` + strings.Repeat("x", 1000) + `"}}`,
			typ: "invalid_request_error", text: strings.Repeat("x", 300) + "…", transient: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := parseAnthropicError(tc.status, []byte(tc.raw))
			if e.Type != tc.typ || !strings.Contains(e.Error(), tc.text) || e.transient() != tc.transient {
				t.Fatalf("got type %q transient %v %q; want type %q transient %v containing %q", e.Type, e.transient(), e.Error(), tc.typ, tc.transient, tc.text)
			}
			if len(e.Message) > 300+len("…") {
				t.Errorf("message not bounded: %d bytes", len(e.Message))
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		h    map[string]string
		want time.Duration
		ok   bool
	}{
		{h: nil, ok: false},
		{h: map[string]string{"Retry-After": "3"}, want: 3 * time.Second, ok: true},
		{h: map[string]string{"Retry-After": "0.5"}, want: 500 * time.Millisecond, ok: true},
		{h: map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, want: 250 * time.Millisecond, ok: true},
		{h: map[string]string{"Retry-After": now.Add(7 * time.Second).Format(http.TimeFormat)}, want: 7 * time.Second, ok: true},
		{h: map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, want: 0, ok: true},
		{h: map[string]string{"Retry-After": "soon"}, ok: false},
		{h: map[string]string{"Retry-After": "-4"}, ok: false},
	}
	for _, tc := range cases {
		h := http.Header{}
		for k, v := range tc.h {
			h.Set(k, v)
		}
		got, ok := retryAfter(h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%v) = %s, %v; want %s, %v", tc.h, got, ok, tc.want, tc.ok)
		}
	}
}

func TestAnthropicBackoffBounded(t *testing.T) {
	for n := 1; n <= 80; n++ {
		d := anthropicBackoff(n)
		lo, hi := 375*time.Millisecond<<(n-1), 500*time.Millisecond<<(n-1)
		if n > 5 || hi <= 0 {
			lo, hi = 6*time.Second, 8*time.Second
		}
		if d < lo || d > hi {
			t.Fatalf("anthropicBackoff(%d) = %s, want in [%s, %s]", n, d, lo, hi)
		}
	}
}

// FuzzParseAnthropicMessage: the parser never panics; it returns text xor an error, and
// an error answer read as a message is an *APIError.
func FuzzParseAnthropicMessage(f *testing.F) {
	f.Add(`{"type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn"}`)
	f.Add(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	f.Add(`{"type":"message","role":"assistant","content":[{"type":"tool_use"}],"stop_reason":null}`)
	f.Add(`{"type":"message","content":[{"type":"text","text":"\u0000"}]}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := parseAnthropicMessage([]byte(raw))
		if (err == nil) == (got == "") {
			t.Fatalf("parse(%q) = %q, %v: want text xor error", raw, got, err)
		}
		var apiErr *APIError
		if errors.As(err, &apiErr) && apiErr.Status != http.StatusOK {
			t.Fatalf("parse(%q): APIError status %d", raw, apiErr.Status)
		}
		if err != nil && len(err.Error()) > 1000 {
			t.Fatalf("parse(%q): unbounded error text (%d bytes)", raw, len(err.Error()))
		}
	})
}
