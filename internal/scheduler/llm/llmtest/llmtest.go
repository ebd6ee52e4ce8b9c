// Package llmtest provides loopback fake LLM servers speaking the real wire formats, for
// tests of code that calls package llm.
package llmtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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
}

// Anthropic starts a server speaking the Anthropic Messages API wire format
// (https://docs.anthropic.com/en/api/messages): POST /v1/messages with the key and an
// anthropic-version header; the answer is {"id","type":"message","role":"assistant",
// "content":[{"type":"text","text":...}],"model","stop_reason","stop_sequence","usage"}.
// Point llm.Config.BaseURL at its URL.
func Anthropic(t testing.TB, r Reply) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != "/v1/messages" {
			http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"not found"}}`, http.StatusNotFound)
			return
		}
		// The API documents the x-api-key header; anthropic-sdk-go v2 sends the key as
		// "Authorization: Bearer". Accept either, but require one and the version header.
		keyOK := req.Header.Get("X-Api-Key") == Key || req.Header.Get("Authorization") == "Bearer "+Key
		if !keyOK || req.Header.Get("Anthropic-Version") == "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
			return
		}
		var body struct {
			Model     string `json:"model"`
			MaxTokens int    `json:"max_tokens"`
			Messages  []struct {
				Role    string `json:"role"`
				Content []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
			} `json:"messages"`
		}
		raw, _ := io.ReadAll(req.Body)
		if err := json.Unmarshal(raw, &body); err != nil || len(body.Messages) == 0 || body.Model == "" || body.MaxTokens <= 0 ||
			(r.MustContain != "" && !strings.Contains(string(raw), r.MustContain)) {
			http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		if !wait(req, r.Delay) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
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
