package auth

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// DefaultPublicURL is the base of the web sign-in redirect when MOSAIC_PUBLIC_URL is unset.
const DefaultPublicURL = "http://127.0.0.1:8642"

// pendingTTL bounds how long a started sign-in may take; maxPending bounds memory.
const (
	pendingTTL = 10 * time.Minute
	maxPending = 64
)

type pendingLogin struct {
	verifier string
	created  time.Time
}

// WebSignIn is "Sign in with Globus" for the web UI: the authorization-code flow with
// a confidential client (GLOBUS_CLIENT_ID/GLOBUS_CLIENT_SECRET), state and PKCE
// checked, the session stored as web-session.json (0600). Mount it at /auth/:
// GET /auth/login, GET /auth/callback, POST /auth/logout, GET /auth/status.
type WebSignIn struct {
	Resolver     *Resolver
	ClientID     string
	ClientSecret string
	// PublicURL is the base URL browsers reach Mosaic at.
	PublicURL string
	// AfterLogin is where the browser goes after signing in or out ("/" by default).
	AfterLogin string
	Log        *slog.Logger

	mu      sync.Mutex
	pending map[string]pendingLogin
}

// NewWebSignIn returns the handler, or nil when no confidential client is configured
// (then the UI needs no sign-in gate and CLI credentials are used).
func NewWebSignIn(r *Resolver) *WebSignIn {
	id, secret := r.getenv(EnvWebClientID), r.getenv(EnvWebClientSecret)
	if id == "" || secret == "" {
		return nil
	}
	pub := r.getenv(EnvPublicURL)
	if pub == "" {
		pub = DefaultPublicURL
	}
	return &WebSignIn{Resolver: r, ClientID: id, ClientSecret: secret, PublicURL: strings.TrimRight(pub, "/"), AfterLogin: "/", Log: r.log()}
}

// RedirectURL is the callback to register with the Globus client.
func (w *WebSignIn) RedirectURL() string { return w.PublicURL + "/auth/callback" }

func (w *WebSignIn) sessionPath() string { return filepath.Join(w.Resolver.Dir, WebSessionFile) }

func (w *WebSignIn) client() *Client { return w.Resolver.client(w.ClientID, w.ClientSecret) }

// SignedIn reports whether a web session is stored.
func (w *WebSignIn) SignedIn() bool {
	_, err := readBundle(w.sessionPath(), w.Resolver.now())
	return err == nil
}

// ServeHTTP routes /auth/login, /auth/callback, /auth/logout and /auth/status.
func (w *WebSignIn) ServeHTTP(rw http.ResponseWriter, req *http.Request) {
	rw.Header().Set("Cache-Control", "no-store")
	switch req.URL.Path {
	case "/auth/login":
		w.login(rw, req)
	case "/auth/callback":
		w.callback(rw, req)
	case "/auth/logout":
		if req.Method != http.MethodPost {
			http.Error(rw, "sign out with POST /auth/logout", http.StatusMethodNotAllowed)
			return
		}
		w.logout(rw, req)
	case "/auth/status":
		w.status(rw, req)
	default:
		http.NotFound(rw, req)
	}
}

func (w *WebSignIn) login(rw http.ResponseWriter, req *http.Request) {
	state, verifier := NewState(), NewVerifier()
	now := w.Resolver.now()
	w.mu.Lock()
	if w.pending == nil {
		w.pending = map[string]pendingLogin{}
	}
	for s, p := range w.pending {
		if now.Sub(p.created) > pendingTTL {
			delete(w.pending, s)
		}
	}
	if len(w.pending) >= maxPending {
		w.mu.Unlock()
		http.Error(rw, "too many sign-ins in progress; try again in a few minutes", http.StatusTooManyRequests)
		return
	}
	w.pending[state] = pendingLogin{verifier: verifier, created: now}
	w.mu.Unlock()
	http.Redirect(rw, req, w.client().AuthorizeURL(w.RedirectURL(), LoginScopes, state, Challenge(verifier), true), http.StatusFound)
}

func (w *WebSignIn) callback(rw http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	if e := q.Get("error"); e != "" {
		http.Error(rw, "Globus sign-in was not completed ("+e+"); start again at /auth/login", http.StatusBadRequest)
		return
	}
	state, code := q.Get("state"), q.Get("code")
	w.mu.Lock()
	p, ok := w.pending[state]
	delete(w.pending, state)
	w.mu.Unlock()
	if state == "" || !ok || w.Resolver.now().Sub(p.created) > pendingTTL {
		w.Log.Warn("web sign-in refused: unknown or expired state")
		http.Error(rw, "sign-in state does not match a sign-in started here (or it expired); start again at /auth/login", http.StatusBadRequest)
		return
	}
	if code == "" {
		http.Error(rw, "no authorization code in the callback; start again at /auth/login", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(req.Context(), 30*time.Second)
	defer cancel()
	c := w.client()
	toks, err := c.ExchangeCode(ctx, code, w.RedirectURL(), p.verifier)
	if err != nil {
		w.Log.Warn("web sign-in refused by Globus Auth", "err", err)
		http.Error(rw, "Globus Auth refused the sign-in: "+err.Error()+"; start again at /auth/login", http.StatusBadRequest)
		return
	}
	if _, ok := toks[ComputeResourceServer]; !ok {
		http.Error(rw, "Globus Auth granted no Globus Compute token; sign in again and accept the Globus Compute scope", http.StatusBadRequest)
		return
	}
	b := &Bundle{ClientID: w.ClientID, Tokens: toks}
	if t, ok := toks[AuthResourceServer]; ok {
		if id, err := c.Userinfo(ctx, t.AccessToken); err == nil {
			b.Identity = id
		}
	}
	w.Resolver.mu.Lock()
	err = writeBundle(w.sessionPath(), b)
	w.Resolver.mu.Unlock()
	if err != nil {
		http.Error(rw, "storing the web session failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Log.Info("web sign-in", "identity", b.Identity.String())
	http.Redirect(rw, req, w.AfterLogin, http.StatusFound)
}

func (w *WebSignIn) logout(rw http.ResponseWriter, req *http.Request) {
	r := w.Resolver
	r.mu.Lock()
	b, err := readBundle(w.sessionPath(), r.now())
	if err == nil {
		ctx, cancel := context.WithTimeout(req.Context(), 15*time.Second)
		if rerr := revokeAll(ctx, w.client(), b); rerr != nil {
			w.Log.Warn("revoking web session tokens failed; deleted locally", "err", rerr)
		}
		cancel()
	}
	rmErr := os.Remove(w.sessionPath())
	r.mu.Unlock()
	if rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
		http.Error(rw, "deleting the web session failed: "+rmErr.Error(), http.StatusInternalServerError)
		return
	}
	http.Redirect(rw, req, w.AfterLogin, http.StatusSeeOther)
}

// WebStatus is GET /auth/status.
type WebStatus struct {
	Configured bool      `json:"configured"`
	SignedIn   bool      `json:"signed_in"`
	Identity   string    `json:"identity,omitempty"`
	ExpiresAt  time.Time `json:"expires_at,omitzero"`
	LoginURL   string    `json:"login_url"`
}

func (w *WebSignIn) status(rw http.ResponseWriter, _ *http.Request) {
	st := WebStatus{Configured: true, LoginURL: "/auth/login"}
	if b, err := readBundle(w.sessionPath(), w.Resolver.now()); err == nil {
		st.SignedIn, st.Identity = true, b.Identity.String()
		st.ExpiresAt = b.Tokens[ComputeResourceServer].Expiry()
	}
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(st)
}
