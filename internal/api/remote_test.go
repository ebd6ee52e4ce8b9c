package api

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

// TestClientAddrTrustedProxy: X-Forwarded-For is believed only from a configured
// trusted proxy, and then its nearest untrusted hop is the client; from any other peer
// (or with no proxy configured) the header is ignored; malformed hops stop the walk.
func TestClientAddrTrustedProxy(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	for _, c := range []struct {
		name, peer, xff string
		trusted         []netip.Prefix
		want            string
	}{
		{"no proxy configured", "10.0.0.1:5", "203.0.113.7", nil, "10.0.0.1:5"},
		{"untrusted peer forges", "198.51.100.2:5", "203.0.113.7", proxies, "198.51.100.2:5"},
		{"trusted proxy", "10.0.0.1:5", "203.0.113.7", proxies, "203.0.113.7 via 10.0.0.1:5"},
		{"chain of trusted proxies", "10.0.0.1:5", "203.0.113.7, 10.2.3.4", proxies, "203.0.113.7 via 10.0.0.1:5"},
		{"client-supplied prefix ignored", "10.0.0.1:5", "1.2.3.4, 203.0.113.7", proxies, "203.0.113.7 via 10.0.0.1:5"},
		{"malformed hop", "10.0.0.1:5", "203.0.113.7, nonsense", proxies, "10.0.0.1:5"},
		{"empty header", "10.0.0.1:5", "", proxies, "10.0.0.1:5"},
		{"only trusted hops", "10.0.0.1:5", "10.9.9.9", proxies, "10.0.0.1:5"},
		{"ipv6 client", "10.0.0.1:5", "2001:db8::1", proxies, "2001:db8::1 via 10.0.0.1:5"},
		{"bad peer", "pipe", "203.0.113.7", proxies, "pipe"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api/whoami", nil)
			r.RemoteAddr = c.peer
			if c.xff != "" {
				r.Header.Set("X-Forwarded-For", c.xff)
			}
			if got := ClientAddr(r, c.trusted); got != c.want {
				t.Fatalf("ClientAddr = %q, want %q", got, c.want)
			}
		})
	}
}

func FuzzClientAddr(f *testing.F) {
	f.Add("203.0.113.7, 10.0.0.2")
	f.Add("")
	f.Add(",,,")
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	f.Fuzz(func(t *testing.T, xff string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "10.0.0.1:5"
		r.Header.Set("X-Forwarded-For", xff)
		got := ClientAddr(r, proxies)
		if got != r.RemoteAddr && !strings.HasSuffix(got, " via 10.0.0.1:5") {
			t.Fatalf("ClientAddr = %q", got)
		}
		if a, ok := strings.CutSuffix(got, " via 10.0.0.1:5"); ok {
			if _, err := netip.ParseAddr(a); err != nil {
				t.Fatalf("client %q is not an address", a)
			}
		}
	})
}

// TestGlobusSignInAudited: starting the Globus sign-in (and signing out) is audited
// under the admin who did it. The sign-in handler is a stand-in: the Globus service
// cannot run here, and the guard's audit happens before it is reached.
func TestGlobusSignInAudited(t *testing.T) {
	signIn := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	hs, _ := coreServer(t, Options{Token: "tok", SignIn: signIn})
	if st, b := call(t, hs, "GET", "/auth/login", "tok", nil); st != http.StatusNoContent {
		t.Fatalf("/auth/login: %d %s", st, b)
	}
	_, b := call(t, hs, "GET", "/api/audit", "tok", nil)
	if !strings.Contains(string(b), `"action":"globus.login"`) {
		t.Fatalf("the audit log lacks the Globus sign-in: %s", b)
	}
}
