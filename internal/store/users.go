package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// User is a person (or service) with API tokens. Users are never deleted, only
// revoked, so the owner of old tasks and the audit log keep their meaning.
type User struct {
	Name      string    `json:"name"`
	Admin     bool      `json:"admin"`
	CreatedAt time.Time `json:"created_at"`
	// RevokedAt is when the user was revoked (zero = active). A revoked user's tokens
	// are refused.
	RevokedAt time.Time `json:"revoked_at,omitzero"`
}

// Token is a stored API token: its display id, owner and label. The token itself is
// never stored, only the SHA-256 of it.
type Token struct {
	ID        string    `json:"id"`
	User      string    `json:"user"`
	Label     string    `json:"label,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
}

// Token format: "mos_" + 8 id characters + "_" + 43 characters of base64url (256
// random bits). The first 12 characters (mos_<id>) are the display id, safe to show
// and log; the rest is the secret.
const (
	TokenPrefix    = "mos_"
	tokenIDLen     = 8
	tokenSecretLen = 43 // base64.RawURLEncoding of 32 bytes
	// TokenLen is the length of every user token.
	TokenLen       = len(TokenPrefix) + tokenIDLen + 1 + tokenSecretLen
	tokenIDLetters = "abcdefghijkmnpqrstuvwxyz23456789"
)

// ErrBadToken is wrapped by ParseToken's errors: the text is not a Mosaic user token.
var ErrBadToken = errors.New("not a Mosaic user token")

// NewToken returns a fresh user token and its display id.
func NewToken() (token, id string) {
	b := make([]byte, tokenIDLen)
	rand.Read(b)
	for i := range b {
		b[i] = tokenIDLetters[int(b[i])%len(tokenIDLetters)]
	}
	id = TokenPrefix + string(b)
	secret := make([]byte, 32)
	rand.Read(secret)
	return id + "_" + base64.RawURLEncoding.EncodeToString(secret), id
}

// ParseToken checks the form of a presented user token and returns its display id.
// The error never repeats the token.
func ParseToken(tok string) (id string, err error) {
	if len(tok) != TokenLen {
		return "", fmt.Errorf("%w: want %d characters, got %d", ErrBadToken, TokenLen, len(tok))
	}
	if !strings.HasPrefix(tok, TokenPrefix) {
		return "", fmt.Errorf("%w: it does not start with %s", ErrBadToken, TokenPrefix)
	}
	rest := tok[len(TokenPrefix):]
	for i := 0; i < tokenIDLen; i++ {
		if !strings.ContainsRune(tokenIDLetters, rune(rest[i])) {
			return "", fmt.Errorf("%w: its id has a character outside [a-z2-9]", ErrBadToken)
		}
	}
	if rest[tokenIDLen] != '_' {
		return "", fmt.Errorf("%w: no '_' after its id", ErrBadToken)
	}
	secret := rest[tokenIDLen+1:]
	if b, err := base64.RawURLEncoding.Strict().DecodeString(secret); err != nil || len(b) != 32 {
		return "", fmt.Errorf("%w: its secret is not 32 bytes of base64url", ErrBadToken)
	}
	return tok[:len(TokenPrefix)+tokenIDLen], nil
}

// TokenHash is the stored form of a token: hex SHA-256.
func TokenHash(tok string) string {
	h := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(h[:])
}

// maxLabelChars bounds a token's label.
const maxLabelChars = 200

// ErrBadName is wrapped by CheckUserName's errors (model.ErrBadUserName).
var ErrBadName = model.ErrBadUserName

// CheckUserName is model.CheckUserName.
func CheckUserName(name string) error { return model.CheckUserName(name) }

// boolInt stores a flag as the INTEGER 0 or 1 (portable across SQLite and PostgreSQL).
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ErrExists is returned when a user of that name already exists.
var ErrExists = errors.New("already exists")

// ErrRevoked is returned for a token or user that was revoked.
var ErrRevoked = errors.New("revoked")

// AddUser stores a new user, and the audit entry a (if not nil) in the same
// transaction.
func (s *Store) AddUser(ctx context.Context, name string, admin bool, a *AuditEntry) (*User, error) {
	if err := CheckUserName(name); err != nil {
		return nil, err
	}
	u := &User{Name: name, Admin: admin, CreatedAt: time.Now().UTC()}
	err := s.tx(ctx, func(tx *txn) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE name = ?`, name).Scan(&n); err != nil {
			return fmt.Errorf("store: read user %s: %w", name, err)
		}
		if n > 0 {
			return fmt.Errorf("user %q: %w (see `mosaic users list`)", name, ErrExists)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO users (name, admin, created_at) VALUES (?,?,?)`,
			name, boolInt(admin), nanos(u.CreatedAt)); err != nil {
			return fmt.Errorf("store: add user %s: %w", name, err)
		}
		return insertAudit(ctx, tx, a)
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// EnsureUser adds an active user if none of that name exists (the implicit local
// admin), without an audit entry; an existing user is left as it is.
func (s *Store) EnsureUser(ctx context.Context, name string, admin bool) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO users (name, admin, created_at) VALUES (?,?,?) ON CONFLICT (name) DO NOTHING`,
		name, boolInt(admin), nanos(time.Now()))
	if err != nil {
		return fmt.Errorf("store: ensure user %s: %w", name, err)
	}
	return nil
}

const userCols = `name, admin, created_at, revoked_at`

func scanUser(sc interface{ Scan(...any) error }) (*User, error) {
	var u User
	var admin, created, revoked int64
	if err := sc.Scan(&u.Name, &admin, &created, &revoked); err != nil {
		return nil, err
	}
	u.Admin = admin != 0
	u.CreatedAt = fromNanos(created)
	if revoked != 0 {
		u.RevokedAt = fromNanos(revoked)
	}
	return &u, nil
}

// User returns one user.
func (s *Store) User(ctx context.Context, name string) (*User, error) {
	u, err := scanUser(s.db.QueryRowContext(ctx, `SELECT `+userCols+` FROM users WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("user %q: %w (see `mosaic users list`)", name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: read user %s: %w", name, err)
	}
	return u, nil
}

// Users lists every user by name.
func (s *Store) Users(ctx context.Context) ([]*User, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+userCols+` FROM users ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("store: list users: %w", err)
	}
	defer rows.Close()
	var out []*User
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// RevokeUser revokes a user and every token of theirs (with the audit entry a in the
// same transaction). Revoking a revoked user is not an error.
func (s *Store) RevokeUser(ctx context.Context, name string, a *AuditEntry) error {
	now := nanos(time.Now())
	return s.tx(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `UPDATE users SET revoked_at = ? WHERE name = ? AND revoked_at = 0`, now, name)
		if err != nil {
			return fmt.Errorf("store: revoke user %s: %w", name, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			var c int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE name = ?`, name).Scan(&c); err != nil {
				return fmt.Errorf("store: read user %s: %w", name, err)
			}
			if c == 0 {
				return fmt.Errorf("user %q: %w (see `mosaic users list`)", name, ErrNotFound)
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE api_tokens SET revoked_at = ? WHERE user_name = ? AND revoked_at = 0`, now, name); err != nil {
			return fmt.Errorf("store: revoke tokens of %s: %w", name, err)
		}
		return insertAudit(ctx, tx, a)
	})
}

// CreateToken makes a new token for an active user and stores its hash (with the
// audit entry a in the same transaction). The token is returned once; it cannot be
// read back.
func (s *Store) CreateToken(ctx context.Context, user, label string, a *AuditEntry) (token string, t *Token, err error) {
	if err := model.CheckLine("label", label, maxLabelChars); err != nil {
		return "", nil, err
	}
	tok, id := NewToken()
	t = &Token{ID: id, User: user, Label: label, CreatedAt: time.Now().UTC()}
	err = s.tx(ctx, func(tx *txn) error {
		var revoked int64
		err := tx.QueryRowContext(ctx, `SELECT revoked_at FROM users WHERE name = ?`, user).Scan(&revoked)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("user %q: %w; add it first with `mosaic users add %s`", user, ErrNotFound, user)
		}
		if err != nil {
			return fmt.Errorf("store: read user %s: %w", user, err)
		}
		if revoked != 0 {
			return fmt.Errorf("user %q is %w; add another user", user, ErrRevoked)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO api_tokens (id, user_name, hash, label, created_at) VALUES (?,?,?,?,?)`,
			id, user, TokenHash(tok), label, nanos(t.CreatedAt)); err != nil {
			return fmt.Errorf("store: create token for %s: %w", user, err)
		}
		if a != nil {
			a.Target = id
		}
		return insertAudit(ctx, tx, a)
	})
	if err != nil {
		return "", nil, err
	}
	return tok, t, nil
}

// Tokens lists the tokens of one user ("" = every user), oldest first.
func (s *Store) Tokens(ctx context.Context, user string) ([]*Token, error) {
	q := `SELECT id, user_name, label, created_at, revoked_at FROM api_tokens`
	var args []any
	if user != "" {
		q += ` WHERE user_name = ?`
		args = append(args, user)
	}
	rows, err := s.db.QueryContext(ctx, q+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list tokens: %w", err)
	}
	defer rows.Close()
	var out []*Token
	for rows.Next() {
		var t Token
		var created, revoked int64
		if err := rows.Scan(&t.ID, &t.User, &t.Label, &created, &revoked); err != nil {
			return nil, err
		}
		t.CreatedAt = fromNanos(created)
		if revoked != 0 {
			t.RevokedAt = fromNanos(revoked)
		}
		out = append(out, &t)
	}
	return out, rows.Err()
}

// TokenOwner returns the user of a stored token id (its display id).
func (s *Store) TokenOwner(ctx context.Context, id string) (string, error) {
	var user string
	err := s.db.QueryRowContext(ctx, `SELECT user_name FROM api_tokens WHERE id = ?`, id).Scan(&user)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("token %q: %w (see `mosaic token list`)", id, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("store: read token %s: %w", id, err)
	}
	return user, nil
}

// RevokeToken revokes one token by its display id (with the audit entry a in the same
// transaction); the next request with it is refused.
func (s *Store) RevokeToken(ctx context.Context, id string, a *AuditEntry) error {
	return s.tx(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at = 0`, nanos(time.Now()), id)
		if err != nil {
			return fmt.Errorf("store: revoke token %s: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			var c int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM api_tokens WHERE id = ?`, id).Scan(&c); err != nil {
				return fmt.Errorf("store: read token %s: %w", id, err)
			}
			if c == 0 {
				return fmt.Errorf("token %q: %w (see `mosaic token list`)", id, ErrNotFound)
			}
		}
		return insertAudit(ctx, tx, a)
	})
}

// Authenticate finds the active user of a presented token. The token is looked up by
// its SHA-256 (an index lookup of a hash, so the comparison does not depend on how
// much of the secret matches); a token of a revoked user or a revoked token is
// refused, read from the store on every call (no cache), so a revocation holds from
// the next request on. Errors never repeat the token.
func (s *Store) Authenticate(ctx context.Context, tok string) (model.Caller, error) {
	id, err := ParseToken(tok)
	if err != nil {
		return model.Caller{}, err
	}
	return s.tokenCaller(ctx, `t.hash = ? AND t.id = ?`, TokenHash(tok), id)
}

// CallerByTokenID returns the caller a token stands for, by its display id, checking
// again that neither the token nor its user is revoked: a browser session or a long
// stream opened with the token re-checks it with this on every request or poll.
func (s *Store) CallerByTokenID(ctx context.Context, id string) (model.Caller, error) {
	return s.tokenCaller(ctx, `t.id = ?`, id)
}

func (s *Store) tokenCaller(ctx context.Context, where string, args ...any) (model.Caller, error) {
	id := args[len(args)-1].(string)
	var user string
	var admin, trev, urev int64
	err := s.db.QueryRowContext(ctx, `SELECT t.user_name, u.admin, t.revoked_at, u.revoked_at FROM api_tokens t
		JOIN users u ON u.name = t.user_name WHERE `+where, args...).Scan(&user, &admin, &trev, &urev)
	if errors.Is(err, sql.ErrNoRows) {
		return model.Caller{}, fmt.Errorf("token %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return model.Caller{}, fmt.Errorf("store: look up token %s: %w", id, err)
	}
	if trev != 0 || urev != 0 {
		return model.Caller{}, fmt.Errorf("token %s: %w", id, ErrRevoked)
	}
	return model.Caller{Name: user, Admin: admin != 0, TokenID: id}, nil
}

// JobOwners returns the owner of each job id of system that is one of Mosaic's
// attempts (others are absent): whose site identity monitors and cancels it.
func (s *Store) JobOwners(ctx context.Context, system string, jobIDs []string) (map[string]string, error) {
	return s.owners(ctx, `SELECT a.job_id, t.owner FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE a.system = ? AND a.job_id IN `,
		[]any{system}, jobIDs)
}

// TagOwners returns the owner of each attempt tag (mosaic-<task>-<n>) that exists.
func (s *Store) TagOwners(ctx context.Context, tags []string) (map[string]string, error) {
	return s.owners(ctx, `SELECT a.tag, t.owner FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE a.tag IN `, nil, tags)
}

func (s *Store) owners(ctx context.Context, q string, args []any, keys []string) (map[string]string, error) {
	out := map[string]string{}
	for len(keys) > 0 {
		n := min(len(keys), 500) // well under every engine's bound on parameters
		chunk := keys[:n]
		keys = keys[n:]
		qs := q + "(" + strings.TrimSuffix(strings.Repeat("?,", len(chunk)), ",") + ")"
		a := append([]any{}, args...)
		for _, k := range chunk {
			a = append(a, k)
		}
		rows, err := s.db.QueryContext(ctx, qs, a...)
		if err != nil {
			return nil, fmt.Errorf("store: read job owners: %w", err)
		}
		for rows.Next() {
			var k, o string
			if err := rows.Scan(&k, &o); err != nil {
				rows.Close()
				return nil, err
			}
			out[k] = o
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// RunOwners returns the owner of each campaign run that has tasks (its submit-mode
// jobs): the user whose token submitted them.
func (s *Store) RunOwners(ctx context.Context) (map[string]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT campaign_run, owner FROM tasks WHERE campaign_run <> ''`)
	if err != nil {
		return nil, fmt.Errorf("store: read campaign run owners: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var run, owner string
		if err := rows.Scan(&run, &owner); err != nil {
			return nil, fmt.Errorf("store: read campaign run owners: %w", err)
		}
		if _, ok := out[run]; !ok {
			out[run] = owner
		}
	}
	return out, rows.Err()
}
