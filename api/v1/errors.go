package v1

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// ErrNoCore means nothing answered at the core's URL: start one with `mosaic serve`.
var ErrNoCore = errors.New("no Mosaic core is running")

// DefaultReconnectFor is how long a follower of the event stream keeps trying while
// the core cannot be reached or answers that it is not ready (503, 502, 504), when the
// caller passes 0 for its reconnect window.
const DefaultReconnectFor = 2 * time.Minute

// Error is an error answer of the core: an RFC 9457 problem with the HTTP status that
// fits it (404 unknown task or system, 409 conflict, 422 refused request, 503 not
// ready yet, ...). Detail says what to do. A request the API's schema refuses (a
// missing field, a number out of range) has Detail "validation failed" and one entry
// in Errors per problem.
type Error struct {
	Status int    `json:"status"`
	Title  string `json:"title"`
	Detail string `json:"detail"`
	// Errors are the problems found validating the request, each with where it is.
	Errors []ErrorItem `json:"errors,omitempty"`
}

// ErrorItem (huma's ErrorDetail; another name so both can sit in one OpenAPI document) is one problem of a refused request: what is wrong, where (such as
// "query.max_queue" or "body.envelope.gpus.min") and the value refused.
type ErrorItem struct {
	Message  string `json:"message,omitempty"`
	Location string `json:"location,omitempty"`
	Value    any    `json:"value,omitempty"`
}

// maxValueText bounds how much of a refused value an error message repeats.
const maxValueText = 80

// String renders "location: message (value v)". The value is repeated only for a
// query or path parameter: a body field may hold a secret (a job's environment, a
// script), and error text travels into logs and agent transcripts.
func (d ErrorItem) String() string {
	s := d.Message
	if d.Location != "" {
		s = d.Location + ": " + s
	}
	if d.Value != nil && (strings.HasPrefix(d.Location, "query.") || strings.HasPrefix(d.Location, "path.")) {
		v := fmt.Sprint(d.Value)
		if r := []rune(v); len(r) > maxValueText {
			v = string(r[:maxValueText]) + "…"
		}
		s += " (value " + v + ")"
	}
	return s
}

// Error is Detail (or the status) followed by every validation problem.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Detail != "" {
		b.WriteString(e.Detail)
	} else {
		fmt.Fprintf(&b, "%d %s", e.Status, e.Title)
	}
	for _, d := range e.Errors {
		b.WriteString("; ")
		b.WriteString(d.String())
	}
	return b.String()
}

// Temporary reports whether the same request may succeed later without change: the
// core is not ready yet or a proxy in front of it failed (503, 502, 504). Event
// followers keep retrying these; every other answer is final.
func (e *Error) Temporary() bool {
	switch e.Status {
	case http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// NoLeaderHeader marks a team-mode follower's 503 that certainly did not carry the
// request out (no leader was known, or the leader could not be connected to): a client
// may send any request, even a non-idempotent one, to another replica. Its value is "1".
const NoLeaderHeader = "Mosaic-No-Leader"
