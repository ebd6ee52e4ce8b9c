// Package session is the browser login of a core: one-time login codes, session
// cookies and the CSRF rule for cookie-authenticated calls. The HTTP API checks them
// in its guard; the web UI issues them (its login page).
package session

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Lifetimes and bounds of login codes and browser sessions.
const (
	// CodeTTL is how long a one-time login code stays valid if unused.
	CodeTTL = 24 * time.Hour
	// SessionTTL is how long a browser session lasts after login.
	SessionTTL = 7 * 24 * time.Hour
	maxCodes   = 64
	maxSession = 256
	// CSRFHeader carries the session's CSRF token on cookie-authenticated requests
	// that change state (POST, PUT, PATCH, DELETE).
	CSRFHeader = "X-Mosaic-CSRF"
	cookieBase = "mosaic_session"
)

// Session is one logged-in browser.
type Session struct {
	CSRF    string    `json:"csrf_token"`
	Expires time.Time `json:"expires"`
	// Owner is who opened the session; the API's guard acts for them.
	Owner Owner `json:"-"`
}

// Owner is who opened a session (or minted the login code it came from): the holder of
// the laptop token (the zero Owner: `mosaic serve`'s printed link, the laptop token
// pasted into /login) or a user, by the display id of the token they used. The guard
// looks the token up again on every request, so revoking it ends the session.
type Owner struct {
	User    string
	TokenID string
}

// Sessions issues one-time login codes (printed by `mosaic serve` as a login URL) and
// turns a redeemed code into a browser session: an HttpOnly, SameSite=Strict cookie
// plus a CSRF token the page sends back in the X-Mosaic-CSRF header. Only hashes of
// codes and session ids are kept, so lookups leak nothing through timing. It is safe
// for concurrent use; everything lives in memory and ends with the process.
type Sessions struct {
	mu       sync.Mutex
	codes    map[[32]byte]code     // hash(code) → expiry and owner
	sessions map[[32]byte]*Session // hash(session id) → session
	now      func() time.Time
}

// NewSessions returns an empty session store. now may be nil (time.Now).
func NewSessions(now func() time.Time) *Sessions {
	if now == nil {
		now = time.Now
	}
	return &Sessions{codes: map[[32]byte]code{}, sessions: map[[32]byte]*Session{}, now: now}
}

func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails on supported platforms (Go 1.24+ panics instead)
	return base64.RawURLEncoding.EncodeToString(b)
}

func hash(s string) [32]byte { return sha256.Sum256([]byte(s)) }

type code struct {
	expires time.Time
	owner   Owner
}

// NewCode mints a one-time login code valid for CodeTTL, for the laptop token's holder.
func (s *Sessions) NewCode() string { return s.NewCodeFor(Owner{}) }

// NewCodeFor mints a one-time login code whose session acts for o.
func (s *Sessions) NewCodeFor(o Owner) string {
	c := randomToken()
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked(now)
	if len(s.codes) >= maxCodes {
		evictOldest(s.codes)
	}
	s.codes[hash(c)] = code{expires: now.Add(CodeTTL), owner: o}
	return c
}

// LoginURL returns base + "/login?code=<fresh one-time code>", for the laptop token's holder.
func (s *Sessions) LoginURL(base string) string { return s.LoginURLFor(base, Owner{}) }

// LoginURLFor returns a one-time login URL whose session acts for o.
func (s *Sessions) LoginURLFor(base string, o Owner) string {
	return strings.TrimRight(base, "/") + "/login?code=" + s.NewCodeFor(o)
}

// Redeem consumes a login code and, if it was valid, opens a session and returns its id.
func (s *Sessions) Redeem(code string) (id string, ok bool) {
	if code == "" || len(code) > 200 {
		return "", false
	}
	now := s.now()
	h := hash(code)
	s.mu.Lock()
	c, found := s.codes[h]
	delete(s.codes, h)
	s.mu.Unlock()
	if !found || now.After(c.expires) {
		return "", false
	}
	return s.OpenFor(c.owner), true
}

// Open starts a new session for the laptop token's holder and returns its id (the
// cookie value).
func (s *Sessions) Open() string { return s.OpenFor(Owner{}) }

// OpenFor starts a new session acting for o and returns its id.
func (s *Sessions) OpenFor(o Owner) string {
	id := randomToken()
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked(now)
	if len(s.sessions) >= maxSession {
		oldest, first := [32]byte{}, true
		var t time.Time
		for k, v := range s.sessions {
			if first || v.Expires.Before(t) {
				oldest, t, first = k, v.Expires, false
			}
		}
		delete(s.sessions, oldest)
	}
	s.sessions[hash(id)] = &Session{CSRF: randomToken(), Expires: now.Add(SessionTTL), Owner: o}
	return id
}

// Lookup returns the session of a cookie value.
func (s *Sessions) Lookup(id string) (Session, bool) {
	if id == "" || len(id) > 200 {
		return Session{}, false
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[hash(id)]
	if !ok || now.After(sess.Expires) {
		return Session{}, false
	}
	return *sess, true
}

// Close ends a session.
func (s *Sessions) Close(id string) {
	s.mu.Lock()
	delete(s.sessions, hash(id))
	s.mu.Unlock()
}

func (s *Sessions) pruneLocked(now time.Time) {
	for k, c := range s.codes {
		if now.After(c.expires) {
			delete(s.codes, k)
		}
	}
	for k, v := range s.sessions {
		if now.After(v.Expires) {
			delete(s.sessions, k)
		}
	}
}

func evictOldest(m map[[32]byte]code) {
	var oldest [32]byte
	var t time.Time
	first := true
	for k, v := range m {
		if first || v.expires.Before(t) {
			oldest, t, first = k, v.expires, false
		}
	}
	delete(m, oldest)
}

// CookieName is the session cookie's name for a Host header. Cookies are scoped to a
// host name but not to a port, so two cores on one machine (8642 and 8643) would
// overwrite each other's cookie; the port is part of the name.
func CookieName(host string) string {
	if _, port, err := net.SplitHostPort(host); err == nil && port != "" {
		return cookieBase + "_" + port
	}
	return cookieBase
}

// FromRequest returns the request's session, if its cookie names a live one.
func (s *Sessions) FromRequest(r *http.Request) (id string, sess Session, ok bool) {
	c, err := r.Cookie(CookieName(r.Host))
	if err != nil {
		return "", Session{}, false
	}
	sess, ok = s.Lookup(c.Value)
	return c.Value, sess, ok
}

// SetCookie writes the session cookie: HttpOnly (scripts cannot read it), SameSite=Strict
// (other sites cannot make the browser send it), Path=/.
func SetCookie(w http.ResponseWriter, r *http.Request, id string) {
	http.SetCookie(w, &http.Cookie{Name: CookieName(r.Host), Value: id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(SessionTTL / time.Second)})
}

// ClearCookie removes the session cookie.
func ClearCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: CookieName(r.Host), Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
}

// CheckCSRF reports whether a cookie-authenticated request may proceed: safe methods
// always; state-changing ones only with the session's token in X-Mosaic-CSRF and, when
// the browser says where the request came from (Sec-Fetch-Site), only from this origin.
func CheckCSRF(r *http.Request, sess Session) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	if sf := r.Header.Get("Sec-Fetch-Site"); sf != "" && sf != "same-origin" {
		return false
	}
	got := r.Header.Get(CSRFHeader)
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(sess.CSRF)) == 1
}
