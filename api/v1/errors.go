package v1

import (
	"errors"
	"fmt"
)

// ErrNoCore means nothing answered at the core's URL: start one with `mosaic serve`.
var ErrNoCore = errors.New("no Mosaic core is running")

// Error is an error answer of the core: an RFC 9457 problem with the HTTP status that
// fits it (404 unknown task or system, 409 conflict, 422 refused request, 503 not
// ready yet, ...). Detail says what to do.
type Error struct {
	Status int    `json:"status"`
	Title  string `json:"title"`
	Detail string `json:"detail"`
}

func (e *Error) Error() string {
	if e.Detail != "" {
		return e.Detail
	}
	return fmt.Sprintf("%d %s", e.Status, e.Title)
}
