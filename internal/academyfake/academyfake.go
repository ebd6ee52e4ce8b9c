// Package academyfake is a stand-in, for tests, of Academy's hosted exchange
// (https://exchange.academy-agents.org/v1), which cannot be reached from test
// machines. The protocol routes are Mosaic's own exchange (internal/exchange
// serves the routes of academy-agents/academy academy/exchange/cloud/app.py);
// what this package adds is the hosted exchange's front door, as
// academy/exchange/cloud/authenticate.py GlobusAuthenticator does it:
//
//   - the request must carry "Authorization: Bearer <token>" (exactly two
//     space-separated parts, get_token_from_headers), else 401;
//   - the token is introspected at Globus Auth (POST /v2/oauth2/token/introspect,
//     as the exchange's own confidential client); an inactive token is 403
//     ("Token is expired or has been revoked."), one whose audience lacks the
//     exchange's resource server is 403 too (the confused-deputy check);
//   - there are no runs, no per-agent tokens and no policy: every
//     authenticated caller shares one mailbox namespace (the fake forwards
//     the request, its Authorization header removed, to an exchange whose
//     AnonymousRun is that namespace).
//
// Globus Auth is internal/globusfake (which mints tokens for the exchange's
// scope with the exchange's client id as resource server, as Globus does).
package academyfake

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/auth"
	"github.com/mosaic-hpc/mosaic/internal/exchange"
	"github.com/mosaic-hpc/mosaic/internal/globusfake"
)

// Namespace is the run every authenticated request acts in.
const Namespace = "academy-hosted"

// Exchange is the fake hosted exchange.
type Exchange struct {
	*httptest.Server
	// URL is the exchange's base URL, with the /v1 of the hosted one.
	URL string
	// ResourceServer is the exchange's Globus client id, its tokens' audience.
	ResourceServer string
	// Inner is the exchange behind the front door (timeline, mailboxes).
	Inner *exchange.Server
	// Refused counts requests answered 401 or 403; Forbidden those answered
	// 403 (a bearer that is not a live token of this exchange's audience).
	Refused, Forbidden atomic.Int64
	// Seen counts requests that passed the front door.
	Seen atomic.Int64

	authURL, secret string
	hc              *http.Client
}

// New starts the fake on 127.0.0.1 with resource server rs ("" = the hosted
// exchange's, auth.AcademyExchangeResourceServer), registering its
// confidential client with the fake Globus Auth g.
func New(t globusfake.TB, g *globusfake.Server, rs string) *Exchange {
	t.Helper()
	if rs == "" {
		rs = auth.AcademyExchangeResourceServer
	}
	x := &Exchange{ResourceServer: rs, authURL: g.URL, secret: "academy-exchange-secret", hc: &http.Client{Timeout: 10 * time.Second}}
	g.AddClient(rs, x.secret)
	// DedupeWindow -1: Academy's hosted exchange neither de-duplicates sends nor
	// sends Mosaic-Exchange-Dedupe, so Mosaic's SDK keeps its conservative retries.
	x.Inner = exchange.NewServer(exchange.Config{AnonymousRun: Namespace, Logger: slog.New(slog.DiscardHandler), DedupeWindow: -1})
	mux := http.NewServeMux()
	mux.Handle("/v1/", http.StripPrefix("/v1", http.HandlerFunc(x.serve)))
	x.Server = httptest.NewServer(mux)
	x.URL = x.Server.URL + "/v1"
	t.Cleanup(func() {
		x.Server.Close()
		_ = x.Inner.Close()
	})
	return x
}

func (x *Exchange) refuse(w http.ResponseWriter, code int, text string) {
	x.Refused.Add(1)
	if code == http.StatusForbidden {
		x.Forbidden.Add(1)
	}
	http.Error(w, text, code)
}

func (x *Exchange) serve(w http.ResponseWriter, r *http.Request) {
	h, ok := r.Header["Authorization"]
	if !ok || len(h) != 1 {
		x.refuse(w, http.StatusUnauthorized, "Request headers are missing authorization header.")
		return
	}
	parts := strings.Split(h[0], " ")
	if len(parts) != 2 || parts[0] != "Bearer" {
		x.refuse(w, http.StatusUnauthorized, "Bearer token in authorization header is malformed.")
		return
	}
	active, aud, err := x.introspect(r, parts[1])
	switch {
	case err != nil:
		http.Error(w, "token introspection failed", http.StatusInternalServerError)
		return
	case !active:
		x.refuse(w, http.StatusForbidden, "Token is expired or has been revoked.")
		return
	case !slices.Contains(aud, x.ResourceServer):
		x.refuse(w, http.StatusForbidden, `Token audience does not include "`+x.ResourceServer+`". This could result in a confused deputy attack. Ensure the correct scopes are requested when the token is created.`)
		return
	}
	x.Seen.Add(1)
	r.Header.Del("Authorization")
	x.Inner.ServeHTTP(w, r)
}

// introspect asks Globus Auth about tok, as the exchange's client.
func (x *Exchange) introspect(r *http.Request, tok string) (bool, []string, error) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, x.authURL+"/v2/oauth2/token/introspect",
		strings.NewReader(url.Values{"token": {tok}}.Encode()))
	if err != nil {
		return false, nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(x.ResourceServer, x.secret)
	resp, err := x.hc.Do(req)
	if err != nil {
		return false, nil, err
	}
	defer resp.Body.Close()
	var v struct {
		Active bool     `json:"active"`
		Aud    []string `json:"aud"`
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return false, nil, err
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return false, nil, err
	}
	return v.Active, v.Aud, nil
}
