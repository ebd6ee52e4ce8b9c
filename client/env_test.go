package client

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	for _, k := range []string{"MOSAIC_URL", "MOSAIC_ADDR", "MOSAIC_TOKEN", "MOSAIC_TOKEN_FILE"} {
		t.Setenv(k, "")
	}
	if _, err := FromEnvironment(); !errors.Is(err, ErrNoCore) || !strings.Contains(err.Error(), filepath.Join(dir, "mosaic", "token")) {
		t.Fatalf("no token anywhere: %v", err)
	}
	tok := filepath.Join(dir, "mosaic", "token")
	os.MkdirAll(filepath.Dir(tok), 0o700)
	os.WriteFile(tok, []byte("secret-token\n"), 0o644)
	if _, err := FromEnvironment(); err == nil || !strings.Contains(err.Error(), "readable by others") {
		t.Fatalf("a world-readable token file: %v", err)
	}
	os.Chmod(tok, 0o600)
	t.Setenv("MOSAIC_ADDR", "127.0.0.1:9999")
	c, err := FromEnvironment()
	if err != nil || c.URL() != "http://127.0.0.1:9999" {
		t.Fatalf("MOSAIC_ADDR: %v %v", c, err)
	}
	t.Setenv("MOSAIC_URL", "http://127.0.0.1:7777")
	t.Setenv("MOSAIC_TOKEN", "from-env")
	c, err = FromEnvironment()
	if err != nil || c.URL() != "http://127.0.0.1:7777" {
		t.Fatalf("MOSAIC_URL: %v %v", c, err)
	}
	// The working directory's .env is never read.
	wd := t.TempDir()
	t.Chdir(wd)
	os.WriteFile(filepath.Join(wd, ".env"), []byte("MOSAIC_URL=http://evil.example\n"), 0o600)
	t.Setenv("MOSAIC_URL", "")
	c, err = FromEnvironment()
	if err != nil || strings.Contains(c.URL(), "evil") {
		t.Fatalf(".env in the working directory was read: %v %v", c, err)
	}
}
