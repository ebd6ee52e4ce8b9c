package auth

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Login runs the native-app authorization-code flow with PKCE: it prints the
// authorize URL to out, reads the one-time code pasted on in, exchanges it, and
// stores the tokens (mode 0600) as the CLI login. Only interactive commands call it.
func (r *Resolver) Login(ctx context.Context, in io.Reader, out io.Writer) (Status, error) {
	id := r.NativeClientID()
	if id == "" {
		return Status{}, fmt.Errorf("no Globus native-app client id: register a \"thick client\" app at https://app.globus.org/settings/developers and set %s to its client id", EnvNativeClientID)
	}
	c := r.client(id, "")
	verifier := NewVerifier()
	redirect := c.NativeRedirect()
	u := c.AuthorizeURL(redirect, r.loginScopes(), "_default", Challenge(verifier), true)
	fmt.Fprintf(out, "Open this URL, sign in with Globus, and paste the authorization code below:\n\n  %s\n\nAuthorization code: ", u)
	line, err := bufio.NewReader(io.LimitReader(in, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return Status{}, fmt.Errorf("reading the authorization code: %w", err)
	}
	code := strings.TrimSpace(line)
	if code == "" {
		return Status{}, errors.New("no authorization code entered; run `mosaic login` again")
	}
	toks, err := c.ExchangeCode(ctx, code, redirect, verifier)
	if err != nil {
		return Status{}, fmt.Errorf("exchanging the authorization code (codes are single-use and expire in minutes; run `mosaic login` again): %w", err)
	}
	b := &Bundle{ClientID: id, Tokens: toks}
	if t, ok := toks[AuthResourceServer]; ok {
		if ident, err := c.Userinfo(ctx, t.AccessToken); err == nil {
			b.Identity = ident
		} else {
			r.log().Warn("globus userinfo failed; login stored without identity", "err", err)
		}
	}
	if _, ok := toks[ComputeResourceServer]; !ok {
		return Status{}, errors.New("no Globus Compute token in the Globus Auth grant; run `mosaic login` again and accept the Globus Compute scope")
	}
	r.mu.Lock()
	err = writeBundle(r.path(CLILoginFile), b)
	r.mu.Unlock()
	if err != nil {
		return Status{}, err
	}
	fmt.Fprintf(out, "\nSigned in as %s; tokens stored in %s\n", b.Identity, r.path(CLILoginFile))
	return r.Status(ctx)
}

// Logout revokes the CLI login's tokens at Globus Auth and deletes the file. A
// revocation failure is reported but the file is deleted anyway.
func (r *Resolver) Logout(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	path := r.path(CLILoginFile)
	b, err := readBundle(path, r.now())
	if errors.Is(err, errNoFile) {
		return nil
	}
	var revokeErr error
	if err == nil {
		id := b.ClientID
		if id == "" {
			id = r.NativeClientID()
		}
		revokeErr = revokeAll(ctx, r.client(id, ""), b)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("deleting %s: %w", path, err)
	}
	if revokeErr != nil {
		return fmt.Errorf("tokens deleted locally, but revoking them at Globus Auth failed (revoke them at https://app.globus.org/account/consents): %w", revokeErr)
	}
	return nil
}

// revokeAll revokes every refresh and access token of a bundle.
func revokeAll(ctx context.Context, c *Client, b *Bundle) error {
	var errs []error
	for _, t := range b.Tokens {
		for _, s := range []string{t.RefreshToken, t.AccessToken} {
			if s != "" {
				if err := c.Revoke(ctx, s); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", t.ResourceServer, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}
