package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/errs"
)

// maxAuthResponse bounds bodies read from Globus Auth.
const maxAuthResponse = 1 << 20

// Client talks to Globus Auth for one OAuth client. A confidential client has a
// secret (sent with HTTP Basic auth); a native client sends client_id in the form.
type Client struct {
	// BaseURL is Globus Auth ("" means DefaultAuthURL).
	BaseURL      string
	ClientID     string
	ClientSecret string
	// HTTP is the client used ("" means a client with a 30s timeout).
	HTTP *http.Client
	// Now is the clock (nil means time.Now).
	Now func() time.Time
}

// GrantError is an OAuth error answer from Globus Auth, e.g. invalid_grant for an
// expired or revoked refresh token or authorization code.
type GrantError struct {
	Status      int
	Code        string
	Description string
}

func (e *GrantError) Error() string {
	s := fmt.Sprintf("globus auth: %s (HTTP %d)", e.Code, e.Status)
	if e.Description != "" {
		s += ": " + e.Description
	}
	return s
}

// Unwrap makes grant errors errs.ErrNeedsLogin: the credential is dead.
func (e *GrantError) Unwrap() error {
	if e.Code == "invalid_grant" || e.Code == "invalid_client" || e.Status == http.StatusUnauthorized {
		return errs.ErrNeedsLogin
	}
	return nil
}

func (c *Client) base() string {
	if c.BaseURL == "" {
		return DefaultAuthURL
	}
	return strings.TrimRight(c.BaseURL, "/")
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: 30 * time.Second}
}

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// NativeRedirect is the page that shows the code to paste (native_app.py default
// redirect_uri "/v2/web/auth-code").
func (c *Client) NativeRedirect() string { return c.base() + "/v2/web/auth-code" }

// AuthorizeURL builds the /v2/oauth2/authorize URL with PKCE (native_app.py
// get_authorize_url). offline asks for refresh tokens.
func (c *Client) AuthorizeURL(redirect string, scopes []string, state, challenge string, offline bool) string {
	access := "online"
	if offline {
		access = "offline"
	}
	q := url.Values{
		"client_id": {c.ClientID}, "redirect_uri": {redirect}, "scope": {strings.Join(scopes, " ")},
		"state": {state}, "response_type": {"code"}, "code_challenge": {challenge},
		"code_challenge_method": {"S256"}, "access_type": {access},
	}
	return c.base() + "/v2/oauth2/authorize?" + q.Encode()
}

// ExchangeCode trades an authorization code (and its PKCE verifier) for tokens.
func (c *Client) ExchangeCode(ctx context.Context, code, redirect, verifier string) (map[string]Token, error) {
	return c.token(ctx, url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"redirect_uri": {redirect}, "code_verifier": {verifier}})
}

// Refresh trades a refresh token for fresh tokens (oauth2_refresh_token).
func (c *Client) Refresh(ctx context.Context, refresh string) (map[string]Token, error) {
	return c.token(ctx, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}})
}

// ClientCredentials gets tokens for the client itself (a service identity).
func (c *Client) ClientCredentials(ctx context.Context, scopes []string) (map[string]Token, error) {
	if c.ClientSecret == "" {
		return nil, errors.New("client-credentials grant needs a client secret")
	}
	return c.token(ctx, url.Values{"grant_type": {"client_credentials"}, "scope": {strings.Join(scopes, " ")}})
}

// Revoke revokes an access or refresh token (POST /v2/oauth2/token/revoke).
func (c *Client) Revoke(ctx context.Context, token string) error {
	form := url.Values{"token": {token}}
	_, err := c.post(ctx, "/v2/oauth2/token/revoke", form)
	return err
}

// Userinfo asks who an auth.globus.org access token belongs to (GET /v2/oauth2/userinfo).
func (c *Client) Userinfo(ctx context.Context, accessToken string) (Identity, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base()+"/v2/oauth2/userinfo", nil)
	if err != nil {
		return Identity{}, err
	}
	req.Header.Set("Authorization", "Bearer "+accessToken)
	body, err := c.do(req)
	if err != nil {
		return Identity{}, err
	}
	var id Identity
	if err := json.Unmarshal(body, &id); err != nil {
		return Identity{}, fmt.Errorf("globus auth userinfo: %w", err)
	}
	return id, nil
}

func (c *Client) token(ctx context.Context, form url.Values) (map[string]Token, error) {
	body, err := c.post(ctx, "/v2/oauth2/token", form)
	if err != nil {
		return nil, err
	}
	return parseTokenResponse(body, c.now())
}

func (c *Client) post(ctx context.Context, path string, form url.Values) ([]byte, error) {
	if c.ClientID == "" {
		return nil, errors.New("no Globus Auth client id configured")
	}
	if c.ClientSecret == "" {
		form.Set("client_id", c.ClientID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base()+path, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if c.ClientSecret != "" {
		req.SetBasicAuth(url.QueryEscape(c.ClientID), url.QueryEscape(c.ClientSecret))
	}
	return c.do(req)
}

func (c *Client) do(req *http.Request) ([]byte, error) {
	req.Header.Set("Accept", "application/json")
	resp, err := c.http().Do(req)
	if err != nil {
		return nil, fmt.Errorf("globus auth %s: %w", req.URL.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAuthResponse))
	if err != nil {
		return nil, fmt.Errorf("globus auth %s: %w", req.URL.Path, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		_ = json.Unmarshal(body, &e)
		if e.Error == "" {
			e.Error = http.StatusText(resp.StatusCode)
		}
		return nil, &GrantError{Status: resp.StatusCode, Code: e.Error, Description: e.Description}
	}
	return body, nil
}
