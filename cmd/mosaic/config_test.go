package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestLoadConfigRecordsEnvFiles: the env files read (here --env-file) reach the
// resolved configuration, so the core protects them, and the token file they name,
// from local look-around without them being in the process environment.
func TestLoadConfigRecordsEnvFiles(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg"))
	t.Setenv("MOSAIC_TOKEN_FILE", "")
	os.Unsetenv("MOSAIC_TOKEN_FILE")
	f := filepath.Join(dir, "settings.env")
	if err := os.WriteFile(f, []byte("MOSAIC_TOKEN_FILE=tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := envFile
	envFile = f
	defer func() { envFile = old }()
	cfg, _, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cfg.EnvFiles, f) || cfg.TokenPath != filepath.Join(dir, "tok") {
		t.Errorf("EnvFiles %q TokenPath %q, want %s and the token it names", cfg.EnvFiles, cfg.TokenPath, f)
	}
}
