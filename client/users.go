package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
)

// User and token types (aliases of the api/v1 wire types).
type (
	Whoami       = v1.Whoami
	User         = v1.User
	Token        = v1.Token
	CreatedToken = v1.CreatedToken
	AuditEntry   = v1.AuditEntry
	AuditPage    = v1.AuditPage
)

// Whoami says who the client's token stands for.
func (c *Client) Whoami(ctx context.Context) (*Whoami, error) {
	var w Whoami
	return &w, c.do(ctx, http.MethodGet, "/api/whoami", nil, nil, &w)
}

// Users lists every user (admin).
func (c *Client) Users(ctx context.Context) ([]User, error) {
	var out v1.UserList
	return out.Users, c.do(ctx, http.MethodGet, "/api/users", nil, nil, &out)
}

// AddUser adds a user (admin).
func (c *Client) AddUser(ctx context.Context, name string, admin bool) (*User, error) {
	var u User
	return &u, c.do(ctx, http.MethodPost, "/api/users", nil, v1.AddUserRequest{Name: name, Admin: admin}, &u)
}

// RevokeUser revokes a user and all their tokens (admin).
func (c *Client) RevokeUser(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodPost, "/api/users/"+url.PathEscape(name)+"/revoke", nil, nil, nil)
}

// CreateToken makes a token for user ("" = the caller) (admin). The answer holds the
// token, this once.
func (c *Client) CreateToken(ctx context.Context, user, label string) (*CreatedToken, error) {
	var t CreatedToken
	return &t, c.do(ctx, http.MethodPost, "/api/tokens", nil, v1.CreateTokenRequest{User: user, Label: label}, &t)
}

// Tokens lists token records (admin), of one user or ("") all.
func (c *Client) Tokens(ctx context.Context, user string) ([]Token, error) {
	q := url.Values{}
	if user != "" {
		q.Set("user", user)
	}
	var out v1.TokenList
	return out.Tokens, c.do(ctx, http.MethodGet, "/api/tokens", q, nil, &out)
}

// RevokeToken revokes a token by its display id, mos_xxxxxxxx (admin).
func (c *Client) RevokeToken(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodPost, "/api/tokens/"+url.PathEscape(id)+"/revoke", nil, nil, nil)
}

// Audit reads the audit log, newest first (admin): of one user ("" = all), before an
// entry id (0 = from the newest), at most limit (0 = 200).
func (c *Client) Audit(ctx context.Context, user string, before int64, limit int) (*AuditPage, error) {
	q := url.Values{}
	if user != "" {
		q.Set("user", user)
	}
	if before > 0 {
		q.Set("before", strconv.FormatInt(before, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var p AuditPage
	return &p, c.do(ctx, http.MethodGet, "/api/audit", q, nil, &p)
}
