// Package web is Mosaic's browser workbench: hand-written HTML, CSS and ES-module
// JavaScript embedded in the binary (no Node toolchain, nothing fetched from the
// network), and the login flow that turns a one-time code (or the pasted API token)
// into an HttpOnly session cookie, with the /api/session endpoints the page reads its
// CSRF token from. The sessions and the CSRF rule themselves live in internal/session;
// the API's guard checks them on every /api call. The page is a client of the same
// /api as the CLI.
package web

import (
	"context"
	"embed"
	"encoding/json"
	"html/template"
	"io/fs"
	"net/http"
	"strings"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/session"
)

//go:embed static
var files embed.FS

// contentSecurityPolicy allows nothing but this origin: no inline scripts or styles, no
// third-party hosts, no framing.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Auth authenticates the token pasted into /login and records the UI's audit entries
// (api.Logins is the core's).
type Auth interface {
	// Login returns who tok stands for: the laptop token's local admin or a user
	// token's user; it must compare the laptop token in constant time.
	Login(ctx context.Context, tok string) (model.Caller, error)
	// Audit records an action of the caller of ctx.
	Audit(ctx context.Context, action, target, detail string)
}

// UI serves the workbench and its login endpoints.
type UI struct {
	sessions *session.Sessions
	auth     Auth
	static   fs.FS
	index    []byte
	login    *template.Template
}

// New returns the UI. auth checks a pasted API token (the fallback login when the
// one-time URL is lost) and records the audit entries of logins.
func New(s *session.Sessions, auth Auth) *UI {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embed directive guarantees the directory
	}
	index, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		panic(err)
	}
	lt := template.Must(template.ParseFS(sub, "login.html"))
	return &UI{sessions: s, auth: auth, static: sub, index: index, login: lt}
}

// Register mounts the UI on mux: the page at /, assets under /ui/, the login flow at
// /login, and the session endpoints under /api/session (which the caller's guard
// must protect like every /api route).
func (u *UI) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", u.serveIndex)
	mux.Handle("GET /ui/", http.StripPrefix("/ui/", u.assets()))
	mux.HandleFunc("GET /login", u.loginGet)
	mux.HandleFunc("POST /login", u.loginPost)
	mux.HandleFunc("GET /api/session", u.sessionInfo)
	mux.HandleFunc("POST /api/session/logout", u.logout)
	mux.HandleFunc("POST /api/session/login-url", u.newLoginURL)
}

func securityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

func (u *UI) serveIndex(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(u.index)
}

func (u *UI) assets() http.Handler {
	fsrv := http.FileServerFS(u.static)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") || r.URL.Path == "login.html" {
			http.NotFound(w, r) // no directory listings; the login template is served by /login
			return
		}
		securityHeaders(w)
		// The assets change with the binary; revalidate so an upgrade is seen at once.
		w.Header().Set("Cache-Control", "no-cache")
		fsrv.ServeHTTP(w, r)
	})
}

type loginPage struct {
	Message string
	Error   bool
}

func (u *UI) renderLogin(w http.ResponseWriter, status int, p loginPage) {
	securityHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	u.login.Execute(w, p)
}

// loginGet redeems a one-time code (?code=…), sets the session cookie and redirects to
// the page, so the code leaves the address bar and history. Without a code it shows a
// form to paste the API token.
func (u *UI) loginGet(w http.ResponseWriter, r *http.Request) {
	code := r.URL.Query().Get("code")
	if code == "" {
		u.renderLogin(w, http.StatusOK, loginPage{})
		return
	}
	id, ok := u.sessions.Redeem(code)
	if !ok {
		u.renderLogin(w, http.StatusUnauthorized, loginPage{Error: true,
			Message: "This login link was already used or has expired. Restart `mosaic serve` for a fresh link, or paste the API token below."})
		return
	}
	session.SetCookie(w, r, id)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// loginPost accepts an API token from the form (the fallback when the login URL is
// lost): the laptop token, or a user's token, whose session then acts for that user.
func (u *UI) loginPost(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		u.renderLogin(w, http.StatusBadRequest, loginPage{Error: true, Message: "The form could not be read; paste the token again."})
		return
	}
	tok := strings.TrimSpace(r.PostForm.Get("token"))
	var caller model.Caller
	var err error
	if tok != "" {
		caller, err = u.auth.Login(r.Context(), tok)
	}
	if tok == "" || err != nil {
		u.renderLogin(w, http.StatusUnauthorized, loginPage{Error: true,
			Message: "That is not a valid token of this core: paste the laptop token ($XDG_CONFIG_HOME/mosaic/token, usually ~/.config/mosaic/token) or your own (mos_…, from `mosaic token create`; a revoked one is refused)."})
		return
	}
	caller.Remote = r.RemoteAddr
	u.auth.Audit(model.WithCaller(r.Context(), caller), "session.login", caller.TokenID, "token pasted into /login")
	session.SetCookie(w, r, u.sessions.OpenFor(session.Owner{User: caller.Name, TokenID: caller.TokenID}))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// sessionInfo answers GET /api/session (v1.Session).
func (u *UI) sessionInfo(w http.ResponseWriter, r *http.Request) {
	if _, sess, ok := u.sessions.FromRequest(r); ok {
		exp := sess.Expires.UTC()
		writeJSON(w, http.StatusOK, v1.Session{Auth: "cookie", CSRFToken: sess.CSRF, Expires: &exp})
		return
	}
	writeJSON(w, http.StatusOK, v1.Session{Auth: "bearer"})
}

func (u *UI) logout(w http.ResponseWriter, r *http.Request) {
	if id, _, ok := u.sessions.FromRequest(r); ok {
		u.sessions.Close(id)
	}
	session.ClearCookie(w, r)
	w.WriteHeader(http.StatusNoContent)
}

// newLoginURL mints a one-time login URL for this host (for `mosaic ui` or a second
// browser). Its session acts for the caller that minted it (the guard put it in the
// context), never for more; the minting is audited.
func (u *UI) newLoginURL(w http.ResponseWriter, r *http.Request) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	caller, ok := model.CallerFrom(r.Context())
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"detail": "not signed in"}) // the guard protects this route; never reached behind it
		return
	}
	u.auth.Audit(r.Context(), "session.login-url", caller.TokenID, "one-time browser login link")
	url := u.sessions.LoginURLFor(scheme+"://"+r.Host, session.Owner{User: caller.Name, TokenID: caller.TokenID})
	writeJSON(w, http.StatusOK, v1.LoginURL{URL: url, ExpiresIn: session.CodeTTL.String()})
}
