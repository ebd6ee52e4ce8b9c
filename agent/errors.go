package agent

import (
	"errors"
	"fmt"
	"net/http"
)

// Errors of exchange calls, matched with errors.Is. They mirror the exceptions
// of Academy's client (_raise_for_status in academy/exchange/cloud/client.py).
var (
	ErrBadRequest   = errors.New("exchange rejected the request as malformed")
	ErrUnauthorized = errors.New("exchange requires credentials (set MOSAIC_EXCHANGE_TOKEN)")
	ErrForbidden    = errors.New("exchange refused access (wrong token, another agent's mailbox, or peer not allowed)")
	ErrConflict     = errors.New("mailbox held by another live registration")
	ErrQuota        = errors.New("exchange quota reached")
	ErrNotFound     = errors.New("mailbox not found on the exchange")
	ErrTimeout      = errors.New("no message before the timeout")
	ErrTooLarge     = errors.New("message larger than the exchange's limit")
	ErrTerminated   = errors.New("mailbox terminated")
)

// StatusError is a non-200 answer of the exchange.
type StatusError struct {
	Op   string // e.g. "send"
	Code int    // HTTP status
	Text string // body of the answer
}

// Error implements error.
func (e *StatusError) Error() string {
	return fmt.Sprintf("exchange %s: HTTP %d: %s", e.Op, e.Code, e.Text)
}

// Unwrap maps the status code to one of the Err* values.
func (e *StatusError) Unwrap() error {
	switch e.Code {
	case http.StatusBadRequest:
		return ErrBadRequest
	case http.StatusUnauthorized:
		return ErrUnauthorized
	case http.StatusForbidden:
		return ErrForbidden
	case http.StatusNotFound:
		return ErrNotFound
	case http.StatusRequestTimeout:
		return ErrTimeout
	case http.StatusRequestEntityTooLarge:
		return ErrTooLarge
	case http.StatusConflict:
		return ErrConflict
	case http.StatusTooManyRequests:
		return ErrQuota
	case 419:
		return ErrTerminated
	}
	return nil
}
