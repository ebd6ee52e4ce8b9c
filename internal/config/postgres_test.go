package config

import (
	"path/filepath"
	"testing"
)

func TestIsPostgresURL(t *testing.T) {
	for v, want := range map[string]bool{
		"postgres://u:p@h/db":   true,
		"postgresql://h/db":     true,
		"POSTGRES://h/db":       true,
		"postgres:/h/db":        false,
		"postgres.db":           false,
		"/var/lib/postgres://x": false,
		"":                      false,
		":memory:":              false,
	} {
		if got := IsPostgresURL(v); got != want {
			t.Errorf("IsPostgresURL(%q) = %v, want %v", v, got, want)
		}
	}
}

// TestEnvFilePostgresURLKept: MOSAIC_DB=postgres://… in a dotenv file is a URL, not a
// file name relative to the file's directory, so it is kept as written.
func TestEnvFilePostgresURLKept(t *testing.T) {
	root := t.TempDir()
	named := filepath.Join(root, "team.env")
	const url = "postgres://mosaic:pw@db.internal:5432/mosaic?sslmode=verify-full"
	writeFile(t, named, "MOSAIC_DB="+url+"\n", 0o600)
	ld, err := Load(LoadOptions{EnvFile: named, Lookup: fakeEnv(map[string]string{"HOME": root, "XDG_CONFIG_HOME": filepath.Join(root, "c")})})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Resolve(ld.Env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DBPath != url {
		t.Fatalf("DBPath %q, want the URL as written", cfg.DBPath)
	}
}
