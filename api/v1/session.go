package v1

import "time"

// Session is the answer of GET /api/session: how the caller is authenticated, and for
// a browser session the CSRF token its state-changing calls must send (in the
// X-Mosaic-CSRF header) and when the session ends.
type Session struct {
	Auth      string     `json:"auth"` // cookie or bearer
	CSRFToken string     `json:"csrf_token,omitempty"`
	Expires   *time.Time `json:"expires,omitempty"`
}

// LoginURL is the answer of POST /api/session/login-url: a one-time login URL for
// another browser, valid for ExpiresIn (a Go duration such as "24h0m0s").
type LoginURL struct {
	URL       string `json:"url"`
	ExpiresIn string `json:"expires_in"`
}
