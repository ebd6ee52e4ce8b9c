package web_test

import (
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mosaic-hpc/mosaic/internal/auth"
	"github.com/mosaic-hpc/mosaic/internal/globusfake"
	"github.com/mosaic-hpc/mosaic/internal/server"
)

// TestGlobusSignInGate drives the Globus web sign-in in Chromium: with a Globus client
// configured the workbench shows the sign-in banner above a working UI; the banner's
// button goes through Globus Auth (the fake, which approves at once) and back, the
// sidebar then names the identity, and "Sign out of Globus" drops the session, revokes
// its tokens and brings the banner back.
func TestGlobusSignInGate(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test; run without -short")
	}
	chromiumOrSkip(t)
	fake := globusfake.New(t)
	const clientID, secret = "mosaic-web-client", "mosaic-web-secret"
	fake.AddClient(clientID, secret)

	var envMu sync.Mutex
	env := map[string]string{auth.EnvAuthURL: fake.URL, auth.EnvWebClientID: clientID, auth.EnvWebClientSecret: secret}
	getenv := func(k string) string { envMu.Lock(); defer envMu.Unlock(); return env[k] }
	res := &auth.Resolver{Dir: filepath.Join(t.TempDir(), "globus"), Getenv: getenv, Now: time.Now, Log: slog.New(slog.DiscardHandler)}

	// The callback must come back to the test server, whose address is known only once
	// it listens: the handler is built then and published through an atomic pointer.
	var signIn atomic.Pointer[auth.WebSignIn]
	d := startDemoWith(t, func(o *server.Options) {
		o.SignIn = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if ws := signIn.Load(); ws != nil {
				ws.ServeHTTP(w, r)
				return
			}
			http.Error(w, "sign-in not ready", http.StatusServiceUnavailable)
		})
	})
	base := d.http.URL
	envMu.Lock()
	env[auth.EnvPublicURL] = base
	envMu.Unlock()
	ws := auth.NewWebSignIn(res)
	if ws == nil {
		t.Fatal("NewWebSignIn returned nil with GLOBUS_CLIENT_ID/SECRET set")
	}
	signIn.Store(ws)

	b := newBrowser(t, 1280, 800)
	b.do(t, "login", 30*time.Second, chromedp.Navigate(d.srv.LoginURL(base)), chromedp.WaitVisible(css("body[data-ready=true]")))

	// Not signed in to Globus: the banner is up, the rest of the workbench works.
	b.do(t, "gate", 10*time.Second, chromedp.WaitVisible(css("#globus-gate #globus-signin")))
	if txt := eval[string](t, b, `document.querySelector('#globus-gate').textContent`); !strings.Contains(txt, "needs-login") || !strings.Contains(txt, "Sign in with Globus") {
		t.Fatalf("the sign-in banner does not explain itself: %q", txt)
	}
	if href := eval[string](t, b, `document.querySelector('#globus-signin').getAttribute('href')`); href != "/auth/login" {
		t.Fatalf("sign-in button links to %q, want /auth/login", href)
	}
	if !eval[bool](t, b, `document.querySelector('#globus-account').hidden`) {
		t.Fatal("the Globus account box is shown while nobody is signed in")
	}
	b.waitJS(t, "overview behind the banner", `document.querySelectorAll('.system-card').length === 6`, 20*time.Second)
	b.shot(t, "globus-gate")
	// On a phone-sized window the banner wraps instead of widening the page.
	b.do(t, "narrow gate", 20*time.Second, chromedp.EmulateViewport(420, 860), chromedp.WaitVisible(css("#globus-signin")))
	if w := eval[float64](t, b, `document.documentElement.scrollWidth`); w > 430 {
		t.Fatalf("with the sign-in banner a narrow window scrolls sideways: %.0f px", w)
	}
	time.Sleep(300 * time.Millisecond) // let the sidebar finish sliding away before the picture
	b.shot(t, "globus-gate-narrow")
	b.do(t, "wide again", 10*time.Second, chromedp.EmulateViewport(1280, 800))
	b.noErrors(t, "gate")

	// Sign in: /auth/login → the fake's authorize page (approves) → /auth/callback → /.
	b.do(t, "sign in with Globus", 30*time.Second, chromedp.Click(css("#globus-signin")), chromedp.WaitVisible(css("#globus-account #globus-signout")))
	b.do(t, "back on the workbench", 20*time.Second, chromedp.WaitVisible(css("body[data-ready=true]")))
	if loc := eval[string](t, b, `location.pathname + location.search`); loc != "/" {
		t.Fatalf("after sign-in the browser is at %q, want /", loc)
	}
	if id := eval[string](t, b, `document.querySelector('#globus-identity').textContent`); id != fake.Identity.String() {
		t.Fatalf("signed in as %q, want %q", id, fake.Identity.String())
	}
	if !eval[bool](t, b, `document.querySelector('#globus-gate').hidden`) {
		t.Fatal("the sign-in banner stayed after signing in")
	}
	b.waitJS(t, "signed-in toast", `/Signed in to Globus as researcher@example.org/.test(document.querySelector('#toasts').textContent)`, 10*time.Second)
	if !ws.SignedIn() {
		t.Fatal("the browser shows a Globus identity but no web session is stored")
	}
	checkMode0600(t, res.Dir)
	minted := fake.Minted()
	if len(minted) == 0 {
		t.Fatal("the fake minted no tokens during sign-in")
	}
	b.shot(t, "globus-signed-in")
	b.noErrors(t, "signed in")

	// Sign out: the session file goes, its tokens are revoked, the banner returns.
	b.do(t, "sign out of Globus", 30*time.Second, chromedp.Click(css("#globus-signout")), chromedp.WaitVisible(css("#globus-gate #globus-signin")))
	if !eval[bool](t, b, `document.querySelector('#globus-account').hidden`) {
		t.Fatal("the Globus account box stayed after signing out")
	}
	if ws.SignedIn() {
		t.Fatal("the web session survived signing out")
	}
	for _, tok := range minted {
		if !fake.Revoked(tok) {
			t.Fatalf("a token of the signed-out session is still live at Globus Auth (%d minted)", len(minted))
		}
	}
	// The Mosaic session itself is untouched: the API still answers the browser.
	b.waitJS(t, "still signed in to Mosaic", `fetch('/api/federation').then(r => window.__fed = r.status) && window.__fed === 200`, 10*time.Second)
	b.noErrors(t, "signed out")
}

// TestGlobusGateAbsentWithoutClient: without a Globus client /auth/status answers 200
// {"configured":false} (not a 404 the browser logs as an error on every page), the rest
// of /auth/ is not mounted, and the workbench shows neither the banner nor the account
// box, and logs no error at all, network ones included.
func TestGlobusGateAbsentWithoutClient(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test; run without -short")
	}
	chromiumOrSkip(t)
	d := startDemo(t)
	b := newBrowser(t, 1280, 800)
	base := d.http.URL
	b.do(t, "login", 30*time.Second, chromedp.Navigate(d.srv.LoginURL(base)), chromedp.WaitVisible(css("body[data-ready=true]")))
	b.waitJS(t, "auth status says not configured", `fetch('/auth/status').then(r => r.json().then(j => window.__as = r.status + ' ' + j.configured)) && window.__as === '200 false'`, 10*time.Second)
	b.waitJS(t, "auth login is 404", `fetch('/auth/login', {redirect: 'manual'}).then(r => window.__al = r.status) && window.__al === 404`, 10*time.Second)
	b.noNetworkErrors(t, "no Globus client", "/auth/login")
	if !eval[bool](t, b, `document.querySelector('#globus-gate').hidden && document.querySelector('#globus-account').hidden`) {
		t.Fatal("a Globus sign-in banner or account box is shown although no Globus client is configured")
	}
	if n := eval[int](t, b, `document.querySelector('#globus-gate').getBoundingClientRect().height`); n != 0 {
		t.Fatalf("the hidden banner still takes %d px", n)
	}
	b.noErrors(t, "no Globus client")
}

// checkMode0600 requires every file under dir to be readable by its owner only.
func checkMode0600(t *testing.T, dir string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", p, st.Mode().Perm())
		}
		n++
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("no web session file under %s (%v)", dir, err)
	}
}
