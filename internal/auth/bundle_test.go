package auth

import (
	"strings"
	"testing"
	"time"
)

func TestParseBundleForms(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	cases := []struct {
		name, in string
		rs       []string
		exp      int64
	}{
		{"mosaic file", `{"client_id":"c","tokens":{"funcx_service":{"resource_server":"funcx_service","access_token":"a","scope":"s","expires_at_seconds":5}}}`, []string{"funcx_service"}, 5},
		{"token response", `{"access_token":"a","expires_in":100,"resource_server":"auth.globus.org","scope":"openid","other_tokens":[{"access_token":"b","expires_in":200,"resource_server":"funcx_service","scope":"x"}]}`, []string{"auth.globus.org", "funcx_service"}, now.Unix() + 200},
		{"by_resource_server", `{"funcx_service":{"access_token":"a","scope":"x","expires_at_seconds":9,"refresh_token":"r"}}`, []string{"funcx_service"}, 9},
	}
	for _, tc := range cases {
		b, err := ParseBundle([]byte(tc.in), now)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, rs := range tc.rs {
			if b.Tokens[rs].ResourceServer != rs {
				t.Errorf("%s: %s missing: %+v", tc.name, rs, b.Tokens)
			}
		}
		if got := b.Tokens["funcx_service"].ExpiresAt; got != tc.exp {
			t.Errorf("%s: expires %d want %d", tc.name, got, tc.exp)
		}
	}
}

func TestParseBundleMalformed(t *testing.T) {
	for _, in := range []string{
		``, `[]`, `null`, `"x"`, `{}`, `{"tokens":{}}`, `{"tokens":[1]}`,
		`{"access_token":"a"}`, `{"access_token":"a","resource_server":"r","other_tokens":[{"access_token":""}]}`,
		`{"funcx_service":{"scope":"x"}}`, `{"funcx_service":3}`, `{"tokens":{"rs":{"scope":"x"}}}`,
	} {
		if b, err := ParseBundle([]byte(in), time.Now()); err == nil {
			t.Errorf("ParseBundle(%q) accepted: %v", in, b)
		}
	}
}

func TestGrantErrorNeedsLogin(t *testing.T) {
	e := &GrantError{Status: 400, Code: "invalid_grant"}
	if e.Unwrap() == nil || !strings.Contains(e.Error(), "invalid_grant") {
		t.Fatal(e)
	}
	if (&GrantError{Status: 400, Code: "invalid_scope"}).Unwrap() != nil {
		t.Fatal("invalid_scope is not a login problem")
	}
}

func FuzzParseBundle(f *testing.F) {
	f.Add(`{"tokens":{"funcx_service":{"access_token":"a","scope":"s"}}}`)
	f.Add(`{"access_token":"a","resource_server":"r","expires_in":5,"other_tokens":[]}`)
	f.Add(`{"r":{"access_token":"a"}}`)
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseBundle([]byte(s), time.Unix(0, 0))
		if err != nil {
			return
		}
		if len(b.Tokens) == 0 {
			t.Fatal("accepted a bundle without tokens")
		}
		for rs, tok := range b.Tokens {
			if tok.ResourceServer == "" || (tok.AccessToken == "" && tok.RefreshToken == "") {
				t.Fatalf("bad token for %q accepted", rs)
			}
			blank := tok
			blank.AccessToken, blank.RefreshToken = "", "x"
			if tok.RefreshToken == "" {
				blank.RefreshToken = ""
			}
			if tok.String() != blank.String() || tok.GoString() != blank.GoString() {
				t.Fatalf("String() depends on the secrets")
			}
		}
	})
}
