// Package web is Mosaic's browser workbench: hand-written HTML, CSS and ES-module
// JavaScript embedded in the binary (no Node toolchain, nothing fetched from the
// network), and the login flow that turns a one-time code (or the pasted API token)
// into an HttpOnly session cookie, with the /api/session endpoints the page reads its
// CSRF token from. The sessions and the CSRF rule themselves live in internal/session;
// the API's guard checks them on every /api call. The page is a client of the same
// /api as the CLI.
package web

import (
	"embed"
	"encoding/json"
	"html/template"
	"io/fs"
	"net/http"
	"strings"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/session"
)

//go:embed static
var files embed.FS

// contentSecurityPolicy allows nothing but this origin: no inline scripts or styles, no
// third-party hosts, no framing.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// UI serves the workbench and its login endpoints.
type UI struct {
	sessions *session.Sessions
	tokenOK  func(string) bool
	static   fs.FS
	index    []byte
	login    *template.Template
}

// New returns the UI. tokenOK checks a pasted API token (the fallback login when the
// one-time URL is lost); it must compare in constant time.
func New(s *session.Sessions, tokenOK func(string) bool) *UI {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embed directive guarantees the directory
	}
	index, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		panic(err)
	}
	lt := template.Must(template.ParseFS(sub, "login.html"))
	return &UI{sessions: s, tokenOK: tokenOK, static: sub, index: index, login: lt}
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

// loginPost accepts the API token from the form (the fallback when the login URL is lost).
func (u *UI) loginPost(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		u.renderLogin(w, http.StatusBadRequest, loginPage{Error: true, Message: "The form could not be read; paste the token again."})
		return
	}
	tok := strings.TrimSpace(r.PostForm.Get("token"))
	if tok == "" || !u.tokenOK(tok) {
		u.renderLogin(w, http.StatusUnauthorized, loginPage{Error: true,
			Message: "That is not this core's API token. It is in $XDG_CONFIG_HOME/mosaic/token (usually ~/.config/mosaic/token)."})
		return
	}
	session.SetCookie(w, r, u.sessions.Open())
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
// browser).
func (u *UI) newLoginURL(w http.ResponseWriter, r *http.Request) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	writeJSON(w, http.StatusOK, v1.LoginURL{URL: u.sessions.LoginURL(scheme + "://" + r.Host), ExpiresIn: session.CodeTTL.String()})
}
