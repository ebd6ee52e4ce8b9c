package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
)

// NewVerifier returns a PKCE code verifier: 32 random bytes, base64url without
// padding (43 characters), as make_native_app_challenge in
// globus_sdk/services/auth/flow_managers/native_app.py.
func NewVerifier() string { return randomString(32) }

// Challenge is the S256 code challenge of a verifier (RFC 7636).
func Challenge(verifier string) string {
	h := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// VerifyChallenge reports whether verifier matches an S256 challenge.
func VerifyChallenge(verifier, challenge string) bool {
	return subtle.ConstantTimeCompare([]byte(Challenge(verifier)), []byte(challenge)) == 1
}

// NewState returns an unguessable OAuth state value.
func NewState() string { return randomString(24) }

func randomString(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
