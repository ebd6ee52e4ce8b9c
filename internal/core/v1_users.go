package core

import (
	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// V1Whoami maps a caller (never its token: only the token's display id).
func V1Whoami(c model.Caller) v1.Whoami {
	return v1.Whoami{Name: c.Name, Admin: c.Admin, TokenID: c.TokenID}
}

// V1Users maps users.
func V1Users(us []*User) []v1.User {
	out := make([]v1.User, len(us))
	for i, u := range us {
		out[i] = V1User(u)
	}
	return out
}

// V1User maps one user.
func V1User(u *User) v1.User {
	return v1.User{Name: u.Name, Admin: u.Admin, CreatedAt: u.CreatedAt, RevokedAt: u.RevokedAt}
}

// V1Tokens maps token records.
func V1Tokens(ts []*Token) []v1.Token {
	out := make([]v1.Token, len(ts))
	for i, t := range ts {
		out[i] = v1.Token{ID: t.ID, User: t.User, Label: t.Label, CreatedAt: t.CreatedAt, RevokedAt: t.RevokedAt}
	}
	return out
}

// V1CreatedToken maps a new token and its record.
func V1CreatedToken(tok string, t *Token) *v1.CreatedToken {
	return &v1.CreatedToken{Token: tok, ID: t.ID, User: t.User, Label: t.Label, CreatedAt: t.CreatedAt}
}

// V1Audit maps audit entries.
func V1Audit(es []AuditEntry) []v1.AuditEntry {
	out := make([]v1.AuditEntry, len(es))
	for i, e := range es {
		out[i] = v1.AuditEntry(e)
	}
	return out
}
