// Package llmtest provides loopback fake LLM servers speaking the real wire formats, for
// tests of code that calls package llm.
package llmtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Key is the API key the fake servers accept.
const Key = "sk-test-secret"

// Reply configures a fake server's answer.
type Reply struct {
	Text  string        // the assistant's text
	Delay time.Duration // wait before answering (or until the client gives up)
	// MustContain, when set, makes the server answer 400 unless the request body contains it.
	MustContain string
	// Fail, when set, answers the first len(Fail) requests with these failures, in
	// order (Anthropic only); later requests get the normal answer.
	Fail []Failure
	// Raw, when set, is sent as the 200 body instead of a well-formed message
	// (Anthropic only), to test how a client copes with malformed answers.
	Raw string
	// Requests, when set, counts the requests the server received.
	Requests *atomic.Int64
}

// Failure is one error answer: an HTTP status with the documented error body (or Body
// verbatim when set), and optional headers such as retry-after.
type Failure struct {
	Status int
	Type   string // error.type, e.g. "overloaded_error"
	Body   string // replaces the documented body when set
	Header map[string]string
}

// AnthropicVersion is the anthropic-version header the fake requires
// (https://docs.anthropic.com/en/api/versioning).
const AnthropicVersion = "2023-06-01"

// Anthropic starts a server speaking the Anthropic Messages API wire format, as
// documented at https://docs.anthropic.com/en/api/messages: POST /v1/messages with the
// headers x-api-key, anthropic-version and content-type: application/json, and a body
// {model, max_tokens, system (a string or text blocks), messages:[{role, content (a
// string or blocks)}]}; the answer is {"id","type":"message","role":"assistant",
// "content":[{"type":"text","text":...}],"model","stop_reason","stop_sequence","usage"}.
// Errors have the shape of https://docs.anthropic.com/en/api/errors:
// {"type":"error","error":{"type":...,"message":...},"request_id":...}.
// Point llm.Config.BaseURL at its URL.
func Anthropic(t testing.TB, r Reply) *httptest.Server {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		i := n.Add(1) - 1
		if r.Requests != nil {
			r.Requests.Add(1)
		}
		fail := func(status int, typ, msg string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "request_id": "req_fake01",
				"error": map[string]string{"type": typ, "message": msg}})
		}
		if req.Method != http.MethodPost || req.URL.Path != "/v1/messages" {
			fail(http.StatusNotFound, "not_found_error", "not found")
			return
		}
		if req.Header.Get("X-Api-Key") != Key {
			fail(http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
			return
		}
		if req.Header.Get("Anthropic-Version") != AnthropicVersion || !strings.HasPrefix(req.Header.Get("Content-Type"), "application/json") {
			fail(http.StatusBadRequest, "invalid_request_error", "anthropic-version: "+AnthropicVersion+" and content-type: application/json are required")
			return
		}
		var body struct {
			Model     string          `json:"model"`
			MaxTokens int             `json:"max_tokens"`
			System    json.RawMessage `json:"system"`
			Messages  []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		raw, _ := io.ReadAll(req.Body)
		if err := json.Unmarshal(raw, &body); err != nil || len(body.Messages) == 0 || body.Model == "" || body.MaxTokens <= 0 ||
			!textOrBlocks(body.System, true) || !messagesOK(body.Messages) ||
			(r.MustContain != "" && !strings.Contains(string(raw), r.MustContain)) {
			fail(http.StatusBadRequest, "invalid_request_error", "bad request")
			return
		}
		if int(i) < len(r.Fail) {
			f := r.Fail[i]
			for k, v := range f.Header {
				w.Header().Set(k, v)
			}
			if f.Body != "" {
				w.WriteHeader(f.Status)
				_, _ = io.WriteString(w, f.Body)
				return
			}
			fail(f.Status, f.Type, "fake failure "+strconv.Itoa(int(i)+1))
			return
		}
		if !wait(req, r.Delay) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.Raw != "" {
			_, _ = io.WriteString(w, r.Raw)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "msg_01", "type": "message", "role": "assistant", "model": body.Model,
			"content":     []map[string]any{{"type": "text", "text": r.Text}},
			"stop_reason": "end_turn", "stop_sequence": nil,
			"usage": map[string]int{"input_tokens": 100, "output_tokens": 50},
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// messagesOK: every message has role user or assistant and content that is a
// non-empty string or a non-empty list of blocks.
func messagesOK(ms []struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}) bool {
	for _, m := range ms {
		if (m.Role != "user" && m.Role != "assistant") || !textOrBlocks(m.Content, false) {
			return false
		}
	}
	return true
}

// textOrBlocks: raw is a non-empty string or a non-empty list of {"type":"text",
// "text":non-empty} blocks (other block types pass unchecked); absent is allowed when
// optional.
func textOrBlocks(raw json.RawMessage, optional bool) bool {
	if len(raw) == 0 {
		return optional
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s != ""
	}
	var blocks []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil || len(blocks) == 0 {
		return false
	}
	for _, b := range blocks {
		if b.Type == "" || (b.Type == "text" && (b.Text == nil || *b.Text == "")) {
			return false
		}
	}
	return true
}

// OpenAI starts a server speaking the OpenAI chat-completions wire format
// (https://platform.openai.com/docs/api-reference/chat/create): POST
// /v1/chat/completions with "Authorization: Bearer <key>"; the answer is
// {"id","object":"chat.completion","model","choices":[{"index","message":{"role":
// "assistant","content":...},"finish_reason"}]}. Point llm.Config.BaseURL at URL+"/v1".
func OpenAI(t testing.TB, r Reply) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != "/v1/chat/completions" {
			http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
			return
		}
		if req.Header.Get("Authorization") != "Bearer "+Key {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key provided: `+req.Header.Get("Authorization")+`"}}`)
			return
		}
		var body struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		raw, _ := io.ReadAll(req.Body)
		if err := json.Unmarshal(raw, &body); err != nil || len(body.Messages) == 0 || body.Model == "" ||
			(r.MustContain != "" && !strings.Contains(string(raw), r.MustContain)) {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		if !wait(req, r.Delay) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "model": body.Model,
			"choices": []map[string]any{{"index": 0, "finish_reason": "stop",
				"message": map[string]string{"role": "assistant", "content": r.Text}}},
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func wait(req *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	select {
	case <-time.After(d):
		return true
	case <-req.Context().Done():
		return false
	}
}
