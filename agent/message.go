package agent

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// Header is Academy's message header (academy/message.py Header).
type Header struct {
	Src   EntityID   `json:"src"`
	Dest  EntityID   `json:"dest"`
	Tag   uuid.UUID  `json:"tag"`
	Label *uuid.UUID `json:"label"`
	Kind  string     `json:"kind"` // "request" or "response"
	// ProtocolVersion is Academy's header version: Mosaic emits ProtocolVersion
	// and accepts messages without it.
	ProtocolVersion string `json:"protocol_version,omitempty"`
}

// Message kinds.
const (
	KindRequest  = "request"
	KindResponse = "response"
)

// Message is an Academy message: a header and a body object whose "kind" field
// names its type (e.g. "action-request", see academy.go; Mosaic-wrapped agents
// also use "mosaic-text").
type Message struct {
	Header Header          `json:"header"`
	Body   json.RawMessage `json:"body"`
}

// BodyKind returns the body's "kind" field ("" if absent).
func (m Message) BodyKind() string {
	var b struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(m.Body, &b)
	return b.Kind
}

// TextKind is the body kind of Mosaic's plain text messages.
const TextKind = "mosaic-text"

// TextBody is the body of a "mosaic-text" message.
type TextBody struct {
	Text string          `json:"text"`
	Data json.RawMessage `json:"data,omitempty"`
	Kind string          `json:"kind"`
}

// NewRequest builds a request message from src to dest with a fresh tag. body
// must marshal to a JSON object with a "kind" field.
func NewRequest(src, dest EntityID, body any) (Message, error) {
	return newMessage(Header{Src: src, Dest: dest, Tag: uuid.New(), Kind: KindRequest, ProtocolVersion: ProtocolVersion}, body)
}

// NewText builds a "mosaic-text" request.
func NewText(src, dest EntityID, text string) Message {
	m, _ := NewRequest(src, dest, TextBody{Text: text, Kind: TextKind}) // cannot fail
	return m
}

// Reply builds the response to request m (same tag and label, ends swapped).
func (m Message) Reply(body any) (Message, error) {
	if m.Header.Kind != KindRequest {
		return Message{}, errors.New("reply: message is not a request")
	}
	h := m.Header
	h.Src, h.Dest, h.Kind, h.ProtocolVersion = m.Header.Dest, m.Header.Src, KindResponse, ProtocolVersion
	return newMessage(h, body)
}

// Text returns the text of a "mosaic-text" body.
func (m Message) Text() (string, bool) {
	var b TextBody
	if json.Unmarshal(m.Body, &b) != nil || b.Kind != TextKind {
		return "", false
	}
	return b.Text, true
}

func newMessage(h Header, body any) (Message, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return Message{}, fmt.Errorf("encode message body: %w", err)
	}
	var probe struct {
		Kind *string `json:"kind"`
	}
	if json.Unmarshal(raw, &probe) != nil || probe.Kind == nil {
		return Message{}, errors.New("message body must be a JSON object with a \"kind\" field")
	}
	return Message{Header: h, Body: raw}, nil
}
