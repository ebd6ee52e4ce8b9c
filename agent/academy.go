package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
)

// ProtocolVersion is the header's protocol_version Mosaic emits (Academy v0.5
// messages carry "1"). Messages without it are accepted.
const ProtocolVersion = "1"

// Body kinds of Academy's messages (academy/message.py, the "kind" field of a
// body; see the wire note in docs/CAMPAIGNS.md "Academy agents"). A Python
// Academy agent validates the kind: it cannot handle any other (TextKind is
// invisible to it).
const (
	KindActionRequest        = "action-request"
	KindActionResponse       = "action-response"
	KindPingRequest          = "ping-request"
	KindShutdownRequest      = "shutdown-request"
	KindCancelRequest        = "cancel-request"
	KindSuccessResponse      = "success-response"
	KindAcademyErrorResponse = "academy-error-response"
	KindUserErrorResponse    = "user-error-response"
)

// SerializationJSON is the only serialization Mosaic produces or accepts.
// Academy's other one, "pickle" (base64 of a Python pickle), could run code
// of the sender's choosing in the reader and means nothing outside Python.
const SerializationJSON = "json"

// serializedMarker starts a serialized value: ["__serialized__", "<text>"].
const serializedMarker = "__serialized__"

// ErrNotJSON says a message uses a serialization other than "json" (pickle).
var ErrNotJSON = errors.New("only JSON serialization is supported (Academy's \"pickle\" is refused: set the caller's serialization to \"json\")")

// ErrBadBody says a message body does not have the shape its kind requires.
var ErrBadBody = errors.New("malformed message body")

// ActionRequestBody is an "action-request" body. With "json" serialization
// PArgs is the string json.dumps(list of positional args) and KArgs the string
// json.dumps(dict of keyword args).
type ActionRequestBody struct {
	Action                 string  `json:"action"`
	Serialization          string  `json:"serialization"`
	ResultSerialization    *string `json:"result_serialization"`
	ExceptionSerialization *string `json:"exception_serialization"`
	PArgs                  string  `json:"pargs"`
	KArgs                  string  `json:"kargs"`
	Kind                   string  `json:"kind"`
}

// ActionResponseBody is an "action-response" body: Result is the serialized
// value ["__serialized__", "<json text>"].
type ActionResponseBody struct {
	Result        json.RawMessage `json:"result"`
	Serialization string          `json:"serialization"`
	Kind          string          `json:"kind"`
}

// PingRequestBody is a "ping-request" body (answered with success-response).
type PingRequestBody struct {
	Kind string `json:"kind"`
}

// ShutdownRequestBody is a "shutdown-request" body: the agent stops; with
// Terminate it also closes its mailbox (nil: the agent's default, which for
// Academy and Mosaic agents is to close it).
type ShutdownRequestBody struct {
	Terminate *bool  `json:"terminate"`
	Kind      string `json:"kind"`
}

// CancelRequestBody is a "cancel-request" body: cancel the running action
// whose request had tag TargetTag.
type CancelRequestBody struct {
	TargetTag uuid.UUID `json:"target_tag"`
	Kind      string    `json:"kind"`
}

// SuccessResponseBody is a "success-response" body (the answer to a ping).
type SuccessResponseBody struct {
	Kind string `json:"kind"`
}

// AcademyErrorResponseBody is an "academy-error-response" body: an error
// Academy's runtime or exchange reports by code, without serialization
// (academy/message.py AcademyErrorResponse). Code 0
// (ErrorCodeMailboxTerminated) means the recipient's mailbox was terminated
// with the request unanswered; the exchange synthesizes it.
type AcademyErrorResponseBody struct {
	ErrorCode int       `json:"error_code"`
	MailboxID *EntityID `json:"mailbox_id"`
	Kind      string    `json:"kind"`
}

// Academy's error codes (academy/message.py ErrorCode, an IntEnum; the
// exceptions AcademyErrorResponse.get_exception raises for each are in
// academy/exception.py).
const (
	ErrorCodeMailboxTerminated    = 0 // MailboxTerminatedError
	ErrorCodePingCancelled        = 1 // PingCancelledError
	ErrorCodeActionInvalidState   = 2 // ActionInvalidStateError
	ErrorCodeActionCancelled      = 3 // ActionCancelledError
	ErrorCodeInvalidClient        = 4 // TypeError: a user client cannot fulfill requests
	ErrorCodeIncompatibleProtocol = 5 // IncompatibleNetworkProtocolError
)

// The errors an academy-error-response reads as (with errors.Is), one per
// code; code 0 reads as a *MailboxTerminatedError matching ErrTerminated.
var (
	ErrPingCancelled        = errors.New("the ping was cancelled (Academy error code 1)")
	ErrActionInvalidState   = errors.New("the agent cannot run the action in its current state (Academy error code 2)")
	ErrActionCancelled      = errors.New("the action was cancelled (Academy error code 3)")
	ErrInvalidClient        = errors.New("the recipient is a user client, which cannot fulfill requests (Academy error code 4)")
	ErrIncompatibleProtocol = errors.New("the recipient speaks an incompatible Academy protocol version (Academy error code 5)")
)

// UserErrorResponseBody is a "user-error-response" body: the action raised.
// Exception is a JSON *string*: with "json" serialization the text
// serialize(exc, "json") = json.dumps({"__exception__": true,
// "exception_str": "<traceback>"}) (academy/message.py
// UserErrorResponse._serialize_obj, academy/serialize.py
// json_exception_serializer); get_exception decodes it only when it is a str.
type UserErrorResponseBody struct {
	Serialization string          `json:"serialization"`
	Exception     json.RawMessage `json:"exception"`
	Kind          string          `json:"kind"`
}

// exceptionJSON is the JSON form of a Python exception.
type exceptionJSON struct {
	Exception bool   `json:"__exception__"`
	Text      string `json:"exception_str"`
}

// serialize returns ["__serialized__", json.dumps(v)], an action-response's
// result (academy/message.py ActionResponse._serialize_result).
func serialize(v any) (json.RawMessage, error) {
	text, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode value as JSON: %w", err)
	}
	return json.Marshal([]string{serializedMarker, string(text)})
}

// deserialize reads ["__serialized__", "<json text>"] and returns the JSON
// value the text holds. JSON null stands for Python's None.
func deserialize(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, fmt.Errorf("%w: the value is missing", ErrBadBody)
	}
	if string(bytes.TrimSpace(raw)) == "null" {
		return json.RawMessage("null"), nil
	}
	var pair []string
	if err := json.Unmarshal(raw, &pair); err != nil || len(pair) != 2 || pair[0] != serializedMarker {
		return nil, fmt.Errorf("%w: a serialized value is [\"__serialized__\", \"<json text>\"], got %.80s", ErrBadBody, raw)
	}
	if !json.Valid([]byte(pair[1])) {
		return nil, fmt.Errorf("%w: the serialized text %.80q is not JSON", ErrBadBody, pair[1])
	}
	return json.RawMessage(pair[1]), nil
}

// checkJSON refuses any serialization but "json".
func checkJSON(field, s string) error {
	if s != SerializationJSON {
		return fmt.Errorf("%s %q: %w", field, s, ErrNotJSON)
	}
	return nil
}

// decodeBody decodes body into v after checking its kind. Unknown fields are
// ignored (a newer Academy may add some); missing or mistyped ones are errors
// where they matter (the callers check them).
func decodeBody(body json.RawMessage, kind string, v any) error {
	if k := bodyKind(body); k != kind {
		return fmt.Errorf("%w: body kind %q, want %q", ErrBadBody, k, kind)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadBody, kind, err)
	}
	return nil
}

func bodyKind(body json.RawMessage) string {
	var b struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(body, &b)
	return b.Kind
}

// ActionBody builds an action-request body with JSON serialization: pargs and
// kargs are the JSON texts of args and kwargs (nil means none).
func ActionBody(action string, args []any, kwargs map[string]any) (ActionRequestBody, error) {
	if strings.TrimSpace(action) == "" {
		return ActionRequestBody{}, errors.New("action request: the action name is empty")
	}
	if args == nil {
		args = []any{}
	}
	if kwargs == nil {
		kwargs = map[string]any{}
	}
	pargs, err := json.Marshal(args)
	if err != nil {
		return ActionRequestBody{}, fmt.Errorf("action request %s: encode args as JSON: %w", action, err)
	}
	kargs, err := json.Marshal(kwargs)
	if err != nil {
		return ActionRequestBody{}, fmt.Errorf("action request %s: encode kwargs as JSON: %w", action, err)
	}
	return ActionRequestBody{Action: action, Serialization: SerializationJSON, PArgs: string(pargs), KArgs: string(kargs), Kind: KindActionRequest}, nil
}

// NewActionRequest builds a request from src asking dest to run action with
// positional args and keyword kwargs (JSON serialization).
func NewActionRequest(src, dest EntityID, action string, args []any, kwargs map[string]any) (Message, error) {
	b, err := ActionBody(action, args, kwargs)
	if err != nil {
		return Message{}, err
	}
	return NewRequest(src, dest, b)
}

// NewPing builds a ping-request (answered with success-response).
func NewPing(src, dest EntityID) Message {
	m, _ := NewRequest(src, dest, PingRequestBody{Kind: KindPingRequest}) // cannot fail
	return m
}

// NewShutdown builds a shutdown-request; terminate also closes dest's mailbox.
func NewShutdown(src, dest EntityID, terminate bool) Message {
	m, _ := NewRequest(src, dest, ShutdownRequestBody{Terminate: &terminate, Kind: KindShutdownRequest}) // cannot fail
	return m
}

// NewCancel builds a cancel-request for the running action requested with target.
func NewCancel(src, dest EntityID, target uuid.UUID) Message {
	m, _ := NewRequest(src, dest, CancelRequestBody{TargetTag: target, Kind: KindCancelRequest}) // cannot fail
	return m
}

// ActionCall is a decoded action request: the action's name and its JSON
// arguments.
type ActionCall struct {
	Action string
	Args   []json.RawMessage
	Kwargs map[string]json.RawMessage
}

// DecodeActionRequest decodes an action-request body. It refuses any
// serialization but "json" (pickle) with an error matching ErrNotJSON, and
// malformed bodies with one matching ErrBadBody; the action name is returned
// whenever it could be read, so that the refusal can name it.
func DecodeActionRequest(body json.RawMessage) (ActionCall, error) {
	var b ActionRequestBody
	if err := decodeBody(body, KindActionRequest, &b); err != nil {
		return ActionCall{}, err
	}
	call := ActionCall{Action: b.Action}
	if strings.TrimSpace(b.Action) == "" {
		return call, fmt.Errorf("%w: action-request names no action", ErrBadBody)
	}
	if err := checkJSON("serialization", b.Serialization); err != nil {
		return call, fmt.Errorf("action %s: %w", b.Action, err)
	}
	for _, s := range []struct {
		field string
		v     *string
	}{{"result_serialization", b.ResultSerialization}, {"exception_serialization", b.ExceptionSerialization}} {
		if s.v != nil {
			if err := checkJSON(s.field, *s.v); err != nil {
				return call, fmt.Errorf("action %s: %w", b.Action, err)
			}
		}
	}
	if err := json.Unmarshal([]byte(b.PArgs), &call.Args); err != nil || (call.Args == nil && strings.TrimSpace(b.PArgs) != "[]") {
		return call, fmt.Errorf("%w: action %s: pargs must be the JSON text of a list, got %.80q", ErrBadBody, b.Action, b.PArgs)
	}
	if err := json.Unmarshal([]byte(b.KArgs), &call.Kwargs); err != nil || call.Kwargs == nil {
		return call, fmt.Errorf("%w: action %s: kargs must be the JSON text of an object, got %.80q", ErrBadBody, b.Action, b.KArgs)
	}
	if call.Args == nil {
		call.Args = []json.RawMessage{}
	}
	return call, nil
}

// DecodeAction decodes m's body as an action request (see DecodeActionRequest).
func (m Message) DecodeAction() (ActionCall, error) { return DecodeActionRequest(m.Body) }

// ActionResult builds the action-response to request m carrying value.
func (m Message) ActionResult(value any) (Message, error) {
	res, err := serialize(value)
	if err != nil {
		return Message{}, err
	}
	return m.Reply(ActionResponseBody{Result: res, Serialization: SerializationJSON, Kind: KindActionResponse})
}

// UserError builds the user-error-response to request m: the action failed
// with text (a Python agent raises it as an AcademyRemoteError). The
// exception is the JSON string Academy's UserErrorResponse carries (see
// UserErrorResponseBody).
func (m Message) UserError(text string) (Message, error) {
	inner, _ := json.Marshal(exceptionJSON{Exception: true, Text: text}) // cannot fail
	exc, _ := json.Marshal(string(inner))                                // cannot fail
	return m.Reply(UserErrorResponseBody{Serialization: SerializationJSON, Exception: exc, Kind: KindUserErrorResponse})
}

// Success builds the success-response to request m (the answer to a ping).
func (m Message) Success() (Message, error) {
	return m.Reply(SuccessResponseBody{Kind: KindSuccessResponse})
}

// ActionError is the failure an agent reported for an action
// (user-error-response): Text is the remote exception (a Python traceback).
type ActionError struct {
	From EntityID
	Text string
}

// Error implements error.
func (e *ActionError) Error() string {
	return fmt.Sprintf("agent %s answered with an error: %s", e.From.NameOr(e.From.UID.String()), e.Text)
}

// MailboxTerminatedError is an academy-error-response of code 0: the
// recipient's mailbox was terminated before it answered. It matches
// ErrTerminated.
type MailboxTerminatedError struct {
	Mailbox EntityID
	Code    int
}

// Error implements error.
func (e *MailboxTerminatedError) Error() string {
	return fmt.Sprintf("the mailbox of %s was terminated before it answered (the agent stopped); restart it and call again", e.Mailbox.NameOr(e.Mailbox.UID.String()))
}

// Unwrap makes the error match ErrTerminated.
func (e *MailboxTerminatedError) Unwrap() error { return ErrTerminated }

// AcademyError is an academy-error-response of a code other than 0: it
// matches the code's Err* value (ErrActionCancelled, ...); an unknown code
// (a newer Academy) matches none.
type AcademyError struct {
	From EntityID // who answered
	Code int
}

// Error implements error.
func (e *AcademyError) Error() string {
	who := e.From.NameOr(e.From.UID.String())
	if base := academyCodeErr(e.Code); base != nil {
		return fmt.Sprintf("%s answered: %v", who, base)
	}
	return fmt.Sprintf("%s answered with Academy error code %d, which this Mosaic does not know (a newer Academy?)", who, e.Code)
}

// Unwrap returns the code's Err* value.
func (e *AcademyError) Unwrap() error { return academyCodeErr(e.Code) }

func academyCodeErr(code int) error {
	switch code {
	case ErrorCodePingCancelled:
		return ErrPingCancelled
	case ErrorCodeActionInvalidState:
		return ErrActionInvalidState
	case ErrorCodeActionCancelled:
		return ErrActionCancelled
	case ErrorCodeInvalidClient:
		return ErrInvalidClient
	case ErrorCodeIncompatibleProtocol:
		return ErrIncompatibleProtocol
	}
	return nil
}

// AcademyErrorReply builds the academy-error-response of code to request m
// (e.g. ErrorCodeActionCancelled for an action a cancel-request stopped, as
// Academy's runtime answers it); mailbox_id is m's destination.
func (m Message) AcademyErrorReply(code int) (Message, error) {
	id := m.Header.Dest
	return m.Reply(AcademyErrorResponseBody{ErrorCode: code, MailboxID: &id, Kind: KindAcademyErrorResponse})
}

// Result reads response m: the JSON value of an action-response, JSON null
// for a success-response, an *ActionError for a user-error-response, a
// *MailboxTerminatedError for an academy-error-response of code 0 (an
// *AcademyError matching the code's Err* value for the others), and an error
// matching ErrBadBody (or ErrNotJSON) for anything else.
func (m Message) Result() (json.RawMessage, error) {
	if m.Header.Kind != KindResponse {
		return nil, fmt.Errorf("%w: message %s is a %s, not a response", ErrBadBody, m.Header.Tag, m.Header.Kind)
	}
	switch k := m.BodyKind(); k {
	case KindActionResponse:
		var b ActionResponseBody
		if err := decodeBody(m.Body, k, &b); err != nil {
			return nil, err
		}
		if err := checkJSON("serialization", b.Serialization); err != nil {
			return nil, err
		}
		return deserialize(b.Result)
	case KindSuccessResponse:
		var b SuccessResponseBody
		if err := decodeBody(m.Body, k, &b); err != nil {
			return nil, err
		}
		return json.RawMessage("null"), nil
	case KindUserErrorResponse:
		var b UserErrorResponseBody
		if err := decodeBody(m.Body, k, &b); err != nil {
			return nil, err
		}
		if err := checkJSON("serialization", b.Serialization); err != nil {
			return nil, err
		}
		text, err := exceptionText(b.Exception)
		if err != nil {
			return nil, err
		}
		return nil, &ActionError{From: m.Header.Src, Text: text}
	case KindAcademyErrorResponse:
		var b AcademyErrorResponseBody
		if err := decodeBody(m.Body, k, &b); err != nil {
			return nil, err
		}
		if b.ErrorCode != ErrorCodeMailboxTerminated {
			return nil, &AcademyError{From: m.Header.Src, Code: b.ErrorCode}
		}
		id := m.Header.Src
		if b.MailboxID != nil {
			id = *b.MailboxID
		}
		return nil, &MailboxTerminatedError{Mailbox: id, Code: b.ErrorCode}
	default:
		return nil, fmt.Errorf("%w: response body kind %q is not an Academy response", ErrBadBody, k)
	}
}

// exceptionText reads a user-error-response's exception. Academy sends a
// JSON string holding the JSON text {"__exception__": true, "exception_str":
// ...} (see UserErrorResponseBody); the pair ["__serialized__", "<that
// text>"] (what Mosaic sent before it matched Academy) and the bare object
// are accepted too.
func exceptionText(raw json.RawMessage) (string, error) {
	inner := bytes.TrimSpace(raw)
	switch {
	case bytes.HasPrefix(inner, []byte(`"`)):
		var text string
		if err := json.Unmarshal(inner, &text); err != nil {
			return "", fmt.Errorf("%w: exception: %w", ErrBadBody, err)
		}
		inner = []byte(text)
	case bytes.HasPrefix(inner, []byte("[")):
		var err error
		if inner, err = deserialize(raw); err != nil {
			return "", err
		}
	}
	var e exceptionJSON
	if err := json.Unmarshal(inner, &e); err != nil || !e.Exception {
		return "", fmt.Errorf("%w: exception must be the JSON text of {\"__exception__\": true, \"exception_str\": ...}, got %.80s", ErrBadBody, inner)
	}
	return e.Text, nil
}

// ShutdownTerminate reads a shutdown-request body: whether the mailbox is to
// be closed too (absent or null: true, Academy's default).
func ShutdownTerminate(body json.RawMessage) (bool, error) {
	var b ShutdownRequestBody
	if err := decodeBody(body, KindShutdownRequest, &b); err != nil {
		return false, err
	}
	return b.Terminate == nil || *b.Terminate, nil
}

// CancelTarget reads a cancel-request body: the tag of the request to cancel.
func CancelTarget(body json.RawMessage) (uuid.UUID, error) {
	var b CancelRequestBody
	if err := decodeBody(body, KindCancelRequest, &b); err != nil {
		return uuid.Nil, err
	}
	if b.TargetTag == uuid.Nil {
		return uuid.Nil, fmt.Errorf("%w: cancel-request has no target_tag", ErrBadBody)
	}
	return b.TargetTag, nil
}
