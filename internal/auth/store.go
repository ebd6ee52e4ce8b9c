package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// File names under the credentials directory.
const (
	// CLILoginFile holds the `mosaic login` bundle.
	CLILoginFile = "cli-login.json"
	// WebSessionFile holds the web sign-in bundle.
	WebSessionFile = "web-session.json"
)

// DefaultDir is $XDG_CONFIG_HOME/mosaic/globus (~/.config/mosaic/globus).
func DefaultDir(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	base := getenv("XDG_CONFIG_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = "."
		}
		base = filepath.Join(home, ".config")
	}
	return filepath.Join(base, "mosaic", "globus")
}

// writeBundle stores b at path with mode 0600 (directory 0700), atomically.
func writeBundle(path string, b *Bundle) error {
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("credentials directory %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("credentials directory %s: %w", dir, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("store %s: %w", path, err)
	}
	return nil
}

// errNoFile means a credentials file does not exist (the source is absent).
var errNoFile = errors.New("no credentials file")

// readBundle loads a bundle file, refusing files others can read.
func readBundle(path string, now time.Time) (*Bundle, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoFile
	}
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("credentials file %s is readable by others (mode %v); run `chmod 600 %s` or delete it and sign in again", path, fi.Mode().Perm(), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	b, err := ParseBundle(data, now)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (delete it and sign in again)", path, err)
	}
	return b, nil
}
