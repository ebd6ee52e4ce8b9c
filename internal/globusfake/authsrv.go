package globusfake

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/auth"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// oauthError is the RFC 6749 error body Globus Auth answers token calls with.
func oauthError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

func (s *Server) authRoutes(mux *http.ServeMux) {
	// native_app.py get_authorize_url: a browser page at the real service; the fake
	// approves at once and redirects with ?code&state.
	mux.HandleFunc("GET /v2/oauth2/authorize", func(w http.ResponseWriter, r *http.Request) {
		c, state, redirect, err := s.approve(r.URL.Query())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		u, _ := url.Parse(redirect)
		q := u.Query()
		q.Set("code", c)
		q.Set("state", state)
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	})
	// base_login_client.py oauth2_token: POST /v2/oauth2/token, form encoded.
	mux.HandleFunc("POST /v2/oauth2/token", s.token)
	// base_login_client.py oauth2_revoke_token: POST /v2/oauth2/token/revoke {token}.
	mux.HandleFunc("POST /v2/oauth2/token/revoke", func(w http.ResponseWriter, r *http.Request) {
		if _, err := s.clientAuth(r); err != nil {
			oauthError(w, http.StatusUnauthorized, "invalid_client", err.Error())
			return
		}
		tok := r.PostForm.Get("token")
		s.mu.Lock()
		if t, ok := s.tokens[tok]; ok {
			t.revoked = true
		}
		if rr, ok := s.refreshes[tok]; ok {
			rr.revoked = true
			for _, t := range s.tokens {
				if t.refresh == tok {
					t.revoked = true
				}
			}
		}
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]bool{"active": false})
	})
	// confidential_client.py oauth2_token_introspect: POST /v2/oauth2/token/introspect
	// {token}, HTTP Basic as the resource server's own client; the answer
	// (docs.globus.org/api/auth/reference/#token-introspect) says whether the
	// token is active and for which audience (aud: resource servers).
	mux.HandleFunc("POST /v2/oauth2/token/introspect", func(w http.ResponseWriter, r *http.Request) {
		c, err := s.clientAuth(r)
		if err != nil || c.secret == "" {
			oauthError(w, http.StatusUnauthorized, "invalid_client", "introspection needs a confidential client")
			return
		}
		s.Introspections.Add(1)
		s.mu.Lock()
		t := s.tokens[r.PostForm.Get("token")]
		s.mu.Unlock()
		if t == nil || t.revoked || time.Now().After(t.expires) {
			writeJSON(w, http.StatusOK, map[string]any{"active": false})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"active": true, "scope": t.scope, "client_id": t.client,
			"aud": []string{t.rs}, "username": s.Identity.Username, "sub": s.Identity.Sub, "exp": t.expires.Unix()})
	})
	// AuthClient.userinfo: GET /v2/oauth2/userinfo with an auth.globus.org token.
	mux.HandleFunc("GET /v2/oauth2/userinfo", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.bearer(w, r, auth.AuthResourceServer); !ok {
			return
		}
		writeJSON(w, http.StatusOK, s.Identity)
	})
}

// Approve plays the user at the authorize URL: it validates the request like Globus
// Auth and returns the one-time code and the state to hand back.
func (s *Server) Approve(authorizeURL string) (code, state string, err error) {
	u, err := url.Parse(authorizeURL)
	if err != nil {
		return "", "", err
	}
	if u.Path != "/v2/oauth2/authorize" {
		return "", "", fmt.Errorf("not an authorize URL: %s", u.Path)
	}
	c, st, _, err := s.approve(u.Query())
	return c, st, err
}

func (s *Server) approve(q url.Values) (string, string, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.clients[q.Get("client_id")]; !ok {
		return "", "", "", fmt.Errorf("unknown client_id %q", q.Get("client_id"))
	}
	if q.Get("response_type") != "code" {
		return "", "", "", errors.New("response_type must be code")
	}
	if q.Get("code_challenge") != "" && q.Get("code_challenge_method") != "S256" {
		return "", "", "", errors.New("code_challenge_method must be S256")
	}
	if q.Get("redirect_uri") == "" || q.Get("scope") == "" {
		return "", "", "", errors.New("redirect_uri and scope are required")
	}
	c := "code-" + randHex(16)
	s.codes[c] = &code{client: q.Get("client_id"), redirect: q.Get("redirect_uri"), challenge: q.Get("code_challenge"),
		scopes: strings.Fields(q.Get("scope")), offline: q.Get("access_type") == "offline"}
	return c, q.Get("state"), q.Get("redirect_uri"), nil
}

// clientAuth authenticates the caller: HTTP Basic for confidential clients, the
// client_id form field for native ones.
func (s *Server) clientAuth(r *http.Request) (client, error) {
	if err := r.ParseForm(); err != nil {
		return client{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, secret, ok := r.BasicAuth(); ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
		c, known := s.clients[id]
		if !known || c.secret == "" || c.secret != secret {
			return client{}, errors.New("client authentication failed")
		}
		return c, nil
	}
	c, known := s.clients[r.PostForm.Get("client_id")]
	if !known {
		return client{}, errors.New("unknown client")
	}
	if c.secret != "" {
		return client{}, errors.New("confidential clients must authenticate")
	}
	return c, nil
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	c, err := s.clientAuth(r)
	if err != nil {
		oauthError(w, http.StatusUnauthorized, "invalid_client", err.Error())
		return
	}
	f := r.PostForm
	switch f.Get("grant_type") {
	case "authorization_code":
		s.mu.Lock()
		cd, ok := s.codes[f.Get("code")]
		if ok {
			delete(s.codes, f.Get("code"))
		}
		s.mu.Unlock()
		switch {
		case !ok || cd.used:
			oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown or used code")
		case cd.client != c.id:
			oauthError(w, http.StatusBadRequest, "invalid_grant", "code issued to another client")
		case cd.redirect != f.Get("redirect_uri"):
			oauthError(w, http.StatusBadRequest, "invalid_grant", "redirect_uri mismatch")
		case cd.challenge != "" && !auth.VerifyChallenge(f.Get("code_verifier"), cd.challenge):
			oauthError(w, http.StatusBadRequest, "invalid_grant", "code_verifier does not match code_challenge")
		case cd.challenge == "" && c.secret == "":
			oauthError(w, http.StatusBadRequest, "invalid_grant", "native clients must use PKCE")
		default:
			writeJSON(w, http.StatusOK, s.mint(c.id, cd.scopes, cd.offline, false))
		}
	case "refresh_token":
		s.Refreshes.Add(1)
		s.mu.Lock()
		rr, ok := s.refreshes[f.Get("refresh_token")]
		s.mu.Unlock()
		if !ok || rr.revoked || rr.client != c.id {
			oauthError(w, http.StatusBadRequest, "invalid_grant", "refresh token invalid, expired or revoked")
			return
		}
		resp := s.mint(c.id, rr.scopes, false, false)
		// Globus keeps refresh tokens (no rotation): report the same one back.
		s.attachRefresh(resp, f.Get("refresh_token"))
		writeJSON(w, http.StatusOK, resp)
	case "client_credentials":
		if c.secret == "" {
			oauthError(w, http.StatusUnauthorized, "invalid_client", "client_credentials needs a confidential client")
			return
		}
		writeJSON(w, http.StatusOK, s.mint(c.id, strings.Fields(f.Get("scope")), false, true))
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", f.Get("grant_type"))
	}
}

type tokenJSON struct {
	AccessToken    string      `json:"access_token"`
	RefreshToken   string      `json:"refresh_token,omitempty"`
	ExpiresIn      int64       `json:"expires_in"`
	ResourceServer string      `json:"resource_server"`
	TokenType      string      `json:"token_type"`
	Scope          string      `json:"scope"`
	State          string      `json:"state,omitempty"`
	OtherTokens    []tokenJSON `json:"other_tokens,omitempty"`
}

// mint issues one token per resource server (auth.globus.org for OpenID scopes,
// funcx_service for Compute, the uuid of any other scope URL, e.g. Academy's
// exchange), the first at top level, the rest in other_tokens.
func (s *Server) mint(clientID string, scopes []string, offline, service bool) map[string]any {
	byRS := map[string][]string{}
	var order []string
	for _, sc := range scopes {
		rs, err := auth.ResourceServerOf(sc)
		if err != nil {
			rs = auth.AuthResourceServer
		}
		if _, ok := byRS[rs]; !ok {
			order = append(order, rs)
		}
		byRS[rs] = append(byRS[rs], sc)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var toks []tokenJSON
	for _, rs := range order {
		at := "fake-at-" + randHex(20)
		t := tokenJSON{AccessToken: at, ExpiresIn: int64(s.TokenLifetime / time.Second), ResourceServer: rs, TokenType: "Bearer", Scope: strings.Join(byRS[rs], " ")}
		rec := &issued{rs: rs, scope: t.Scope, client: clientID, expires: time.Now().Add(s.TokenLifetime), service: service}
		if offline {
			rt := "fake-rt-" + randHex(20)
			t.RefreshToken = rt
			rec.refresh = rt
			s.refreshes[rt] = &refreshRec{client: clientID, scopes: slices.Clone(byRS[rs])}
			s.minted = append(s.minted, rt)
		}
		s.tokens[at] = rec
		s.minted = append(s.minted, at)
		toks = append(toks, t)
	}
	if len(toks) == 0 {
		return map[string]any{}
	}
	top := toks[0]
	top.OtherTokens = append([]tokenJSON{}, toks[1:]...)
	b, _ := json.Marshal(top)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

func (s *Server) attachRefresh(resp map[string]any, rt string) {
	resp["refresh_token"] = rt
	s.mu.Lock()
	if at, ok := resp["access_token"].(string); ok {
		if t := s.tokens[at]; t != nil {
			t.refresh = rt
		}
	}
	s.mu.Unlock()
}

// bearer checks an Authorization header for a live token of a resource server.
func (s *Server) bearer(w http.ResponseWriter, r *http.Request, rs string) (*issued, bool) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	t := s.tokens[tok]
	s.mu.Unlock()
	if !ok || t == nil || t.revoked || t.rs != rs || time.Now().After(t.expires) {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"code": "UNAUTHORIZED", "message": "invalid, expired or revoked token"})
		return nil, false
	}
	return t, true
}
