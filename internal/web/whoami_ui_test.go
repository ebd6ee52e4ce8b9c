package web_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestWhoamiInHeader: the top bar says who is signed in; the login URL `mosaic serve`
// prints signs in the laptop's implicit admin, "local".
func TestWhoamiInHeader(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test; run without -short")
	}
	chromiumOrSkip(t)
	d := startDemo(t)
	b := newBrowser(t, 1280, 800)
	base := d.http.URL
	b.do(t, "login", 30*time.Second, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(d.srv.LoginURL(base)), chromedp.WaitVisible(css("body[data-ready=true]")))
	b.waitJS(t, "who-am-I chip", `!document.querySelector('#whoami').hidden`, 10*time.Second)
	if got := eval[string](t, b, `document.querySelector('#whoami').textContent`); got != "signed in as local · admin" {
		t.Errorf("top bar says %q, want %q", got, "signed in as local · admin")
	}
	b.noErrors(t, "whoami")
}
