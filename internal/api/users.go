package api

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/core"
)

type whoamiOut struct{ Body v1.Whoami }

type usersOut struct{ Body v1.UserList }

type addUserIn struct {
	Body struct {
		Name  string `json:"name" minLength:"1" maxLength:"64" doc:"User name: a-z, 0-9, '.', '_', '-', starting with a letter"`
		Admin bool   `json:"admin,omitempty" doc:"An admin acts on every user's work and manages users and tokens"`
	}
}

type userOut struct{ Body v1.User }

type userNameIn struct {
	Name string `path:"name" maxLength:"64"`
}

type tokensIn struct {
	User string `query:"user" maxLength:"64" doc:"Only this user's tokens"`
}

type tokensOut struct{ Body v1.TokenList }

type createTokenIn struct {
	Body *struct {
		User  string `json:"user,omitempty" maxLength:"64" doc:"The user the token acts for; empty = the caller"`
		Label string `json:"label,omitempty" maxLength:"200" doc:"What the token is for (shown in mosaic token list)"`
	} `required:"false"`
}

type createdTokenOut struct {
	Status int
	Body   *v1.CreatedToken
}

type tokenIDIn struct {
	ID string `path:"id" maxLength:"64" doc:"The token's display id, mos_xxxxxxxx"`
}

type auditIn struct {
	User   string `query:"user" maxLength:"64" doc:"Only this user's actions"`
	Before int64  `query:"before" minimum:"0" doc:"Only entries with a smaller id (next_before of the previous page)"`
	Limit  int    `query:"limit" minimum:"0" maximum:"10000" doc:"At most this many (default 200)"`
}

type auditOut struct{ Body v1.AuditPage }

type emptyOut struct{}

// registerUsers adds who-am-I, users, tokens and the audit log. Everything but
// whoami needs an admin (403 otherwise).
func (s *Server) registerUsers() {
	huma.Register(s.api, huma.Operation{
		OperationID: "whoami", Method: http.MethodGet, Path: "/api/whoami",
		Summary: "Who the presented token or session stands for", Tags: []string{"users"},
		Errors:      apiErrors(),
		Description: "The user the presented token or session stands for: name, whether an admin, the token's display id. Anyone signed in may ask.",
	}, func(ctx context.Context, _ *struct{}) (*whoamiOut, error) {
		return &whoamiOut{Body: core.V1Whoami(s.core.Whoami(ctx))}, nil
	})
	huma.Register(s.api, huma.Operation{
		OperationID: "list-users", Method: http.MethodGet, Path: "/api/users",
		Summary: "Every user (admin)", Tags: []string{"users"},
		Errors:      apiErrors(),
		Description: "Every user with admin flag, creation and revocation times. Admins only (403 otherwise).",
	}, func(ctx context.Context, _ *struct{}) (*usersOut, error) {
		us, err := s.core.Users(ctx)
		if err != nil {
			return nil, toHTTP(ctx, err)
		}
		return &usersOut{Body: v1.UserList{Users: core.V1Users(us)}}, nil
	})
	huma.Register(s.api, huma.Operation{
		OperationID: "add-user", Method: http.MethodPost, Path: "/api/users",
		Summary: "Add a user (admin); give them a token with POST /api/tokens", Tags: []string{"users"},
		Errors:        apiErrors(400, 409, 422),
		Description:   "Adds a user (optionally an admin); 409 when the name exists. Admins only. The action is audited.",
		DefaultStatus: http.StatusCreated,
	}, func(ctx context.Context, in *addUserIn) (*userOut, error) {
		u, err := s.core.AddUser(ctx, in.Body.Name, in.Body.Admin)
		if err != nil {
			return nil, toHTTP(ctx, err)
		}
		return &userOut{Body: core.V1User(u)}, nil
	})
	huma.Register(s.api, huma.Operation{
		OperationID: "revoke-user", Method: http.MethodPost, Path: "/api/users/{name}/revoke",
		Summary: "Revoke a user and every token of theirs (admin); their next request is refused", Tags: []string{"users"},
		Errors:        apiErrors(404, 422),
		Description:   "Revokes a user and with it every token of theirs, effective from the next request. The implicit laptop user cannot be revoked. Admins only; audited.",
		DefaultStatus: http.StatusNoContent,
	}, func(ctx context.Context, in *userNameIn) (*emptyOut, error) {
		if err := s.core.RevokeUser(ctx, in.Name); err != nil {
			return nil, toHTTP(ctx, err)
		}
		return &emptyOut{}, nil
	})
	huma.Register(s.api, huma.Operation{
		OperationID: "list-tokens", Method: http.MethodGet, Path: "/api/tokens",
		Summary: "Token records (admin); never the tokens themselves", Tags: []string{"users"},
		Errors:      apiErrors(),
		Description: "API tokens by display id, owner, label and times; never the secret (only its hash is stored). Admins only.",
	}, func(ctx context.Context, in *tokensIn) (*tokensOut, error) {
		ts, err := s.core.Tokens(ctx, in.User)
		if err != nil {
			return nil, toHTTP(ctx, err)
		}
		return &tokensOut{Body: v1.TokenList{Tokens: core.V1Tokens(ts)}}, nil
	})
	huma.Register(s.api, huma.Operation{
		OperationID: "create-token", Method: http.MethodPost, Path: "/api/tokens",
		Summary: "Make an API token for a user (admin); the answer holds it, once", Tags: []string{"users"},
		Errors:        apiErrors(400, 404, 422),
		DefaultStatus: http.StatusCreated,
		Description:   "Only the token's SHA-256 is stored: the token cannot be read back. Keep it like a password.",
	}, func(ctx context.Context, in *createTokenIn) (*createdTokenOut, error) {
		var user, label string
		if in.Body != nil {
			user, label = in.Body.User, in.Body.Label
		}
		tok, t, err := s.core.CreateToken(ctx, user, label)
		if err != nil {
			return nil, toHTTP(ctx, err)
		}
		return &createdTokenOut{Status: http.StatusCreated, Body: core.V1CreatedToken(tok, t)}, nil
	})
	huma.Register(s.api, huma.Operation{
		OperationID: "revoke-token", Method: http.MethodPost, Path: "/api/tokens/{id}/revoke",
		Summary: "Revoke a token (admin); the next request with it is refused", Tags: []string{"users"},
		Errors:        apiErrors(404, 422),
		Description:   "Revokes one token by its display id, effective from the next request. Admins only; audited.",
		DefaultStatus: http.StatusNoContent,
	}, func(ctx context.Context, in *tokenIDIn) (*emptyOut, error) {
		if err := s.core.RevokeToken(ctx, in.ID); err != nil {
			return nil, toHTTP(ctx, err)
		}
		return &emptyOut{}, nil
	})
	huma.Register(s.api, huma.Operation{
		OperationID: "list-audit", Method: http.MethodGet, Path: "/api/audit",
		Summary: "The audit log, newest first (admin): who submitted, cancelled, replanned, added users, made tokens", Tags: []string{"users"},
		Errors:      apiErrors(422),
		Description: "Who did what: submissions, cancels, replans, campaign launches, user and token changes, with time and client address, newest first. Admins only.",
	}, func(ctx context.Context, in *auditIn) (*auditOut, error) {
		limit := in.Limit
		if limit <= 0 {
			limit = 200
		}
		limit = min(limit, core.MaxAuditPage) // one more is asked for below: the store allows it
		es, err := s.core.Audit(ctx, core.AuditQuery{User: in.User, BeforeID: in.Before, Limit: limit + 1})
		if err != nil {
			return nil, toHTTP(ctx, err)
		}
		out := &auditOut{}
		if len(es) > limit {
			es = es[:limit]
			out.Body.NextBefore = es[limit-1].ID
		}
		out.Body.Entries = core.V1Audit(es)
		return out, nil
	})
}
