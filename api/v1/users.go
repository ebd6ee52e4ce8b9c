package v1

import "time"

// Whoami is who the presented credential stands for (GET /api/whoami).
type Whoami struct {
	// Name is the user name; "local" is the laptop token's implicit admin.
	Name  string `json:"name"`
	Admin bool   `json:"admin"`
	// TokenID is the display id of the token used (mos_xxxxxxxx), empty for the
	// laptop token or a browser session.
	TokenID string `json:"token_id,omitempty"`
}

// User is a user of a shared core. Users are revoked, never deleted.
type User struct {
	Name      string    `json:"name"`
	Admin     bool      `json:"admin"`
	CreatedAt time.Time `json:"created_at"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
}

// UserList answers GET /api/users.
type UserList struct {
	Users []User `json:"users"`
}

// AddUserRequest is the body of POST /api/users.
type AddUserRequest struct {
	Name  string `json:"name"`
	Admin bool   `json:"admin,omitempty"`
}

// Token is a stored API token's record: never the token itself.
type Token struct {
	ID        string    `json:"id"`
	User      string    `json:"user"`
	Label     string    `json:"label,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
}

// TokenList answers GET /api/tokens.
type TokenList struct {
	Tokens []Token `json:"tokens"`
}

// CreateTokenRequest is the body of POST /api/tokens.
type CreateTokenRequest struct {
	// User the token acts for; empty = the caller.
	User  string `json:"user,omitempty"`
	Label string `json:"label,omitempty"`
}

// CreatedToken answers POST /api/tokens: the token, shown this once (only its hash
// is stored), and its record.
type CreatedToken struct {
	Token     string    `json:"token"`
	ID        string    `json:"id"`
	User      string    `json:"user"`
	Label     string    `json:"label,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// AuditEntry is one line of the audit log: who did what, to what, when, from where.
type AuditEntry struct {
	ID     int64     `json:"id"`
	Time   time.Time `json:"time"`
	User   string    `json:"user"`
	Action string    `json:"action"`
	Target string    `json:"target,omitempty"`
	Remote string    `json:"remote,omitempty"`
	Detail string    `json:"detail,omitempty"`
}

// AuditPage answers GET /api/audit, newest first.
type AuditPage struct {
	Entries []AuditEntry `json:"entries"`
	// NextBefore, when set, reads the next older page as before.
	NextBefore int64 `json:"next_before,omitempty"`
}
