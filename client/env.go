package client

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DefaultAddr is where a core listens unless MOSAIC_ADDR says otherwise.
const DefaultAddr = "127.0.0.1:8642"

// FromEnvironment finds the local core as the CLI does, from the process environment
// only: the URL from MOSAIC_URL (else http://MOSAIC_ADDR, default DefaultAddr), the
// token from MOSAIC_TOKEN, else the file MOSAIC_TOKEN_FILE names, else
// $XDG_CONFIG_HOME/mosaic/token (~/.config/mosaic/token), which `mosaic serve` creates.
// It never reads the working directory (a stranger's .env could point the token at
// their server); settings the CLI takes from --env-file or the config directory's env
// file must be in the environment of a program that uses this.
func FromEnvironment() (*Client, error) {
	url := os.Getenv("MOSAIC_URL")
	if url == "" {
		addr := os.Getenv("MOSAIC_ADDR")
		if addr == "" {
			addr = DefaultAddr
		}
		url = "http://" + addr
	}
	tok := os.Getenv("MOSAIC_TOKEN")
	if tok == "" {
		path, err := tokenPath()
		if err != nil {
			return nil, err
		}
		tok, err = readToken(path)
		if err != nil {
			return nil, fmt.Errorf("%w at %s: no token at %s (start one with `mosaic serve`, which creates it): %w", ErrNoCore, url, path, err)
		}
	}
	return New(url, tok)
}

func tokenPath() (string, error) {
	if p := os.Getenv("MOSAIC_TOKEN_FILE"); p != "" {
		return p, nil
	}
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no home directory for the token file (set MOSAIC_TOKEN or MOSAIC_TOKEN_FILE): %w", err)
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "mosaic", "token"), nil
}

// readToken reads a token file, refusing one that others can read (it is a bearer
// credential) or that is empty.
func readToken(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("token file %s is readable by others (chmod 600 it)", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", errors.New("token file " + path + " is empty")
	}
	return tok, nil
}
