package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseDotEnv(t *testing.T) {
	got, err := ParseDotEnv(".env", []byte("# c\n\nA=1\nexport B = two # note\nC='x # y'\nD=\"l1\\nl2\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"A": "1", "B": "two", "C": "x # y", "D": "l1\nl2"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

func TestParseDotEnvErrors(t *testing.T) {
	for _, in := range []string{"NOEQUALS", "1BAD=x", "A-B=1", "Q=\"open", "=v"} {
		_, err := ParseDotEnv("x.env", []byte("OK=1\n"+in+"\n"))
		if err == nil || !strings.Contains(err.Error(), "x.env:2") {
			t.Errorf("%q: want error at x.env:2, got %v", in, err)
		}
	}
}

func FuzzParseDotEnv(f *testing.F) {
	f.Add([]byte("A=1\nexport B='2'\n"))
	f.Add([]byte("C=\"x\\ny\"\n#c\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseDotEnv("f", b)
		if err == nil {
			for k := range m {
				if !validKey(k) {
					t.Fatalf("accepted bad key %q", k)
				}
			}
		}
	})
}

func TestRealEnvWinsOverDotEnv(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ".env"), []byte("MOSAIC_TEST_X=file\nMOSAIC_TEST_Y=file\n"), 0o600)
	t.Setenv("MOSAIC_TEST_X", "real")
	env, err := LoadEnv(dir)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := env("MOSAIC_TEST_X"); v != "real" {
		t.Errorf("X=%q", v)
	}
	if v, _ := env("MOSAIC_TEST_Y"); v != "file" {
		t.Errorf("Y=%q", v)
	}
}

func TestResolve(t *testing.T) {
	env := func(m map[string]string) Env {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	c, err := Resolve(env(map[string]string{"XDG_STATE_HOME": "/s", "XDG_CONFIG_HOME": "/c", "MOSAIC_TICK": "2s"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.DBPath != "/s/mosaic/mosaic.db" || c.TokenPath != "/c/mosaic/token" || c.Tick.String() != "2s" || c.URL != "http://127.0.0.1:8642" {
		t.Fatalf("%+v", c)
	}
	for _, bad := range []map[string]string{{"MOSAIC_TICK": "fast"}, {"MOSAIC_TICK": "1ms"}, {"MOSAIC_SIM_SPEED": "-1"}} {
		if _, err := Resolve(env(bad)); err == nil {
			t.Errorf("%v: want error", bad)
		}
	}
}

func TestTokenFileMode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", "token")
	tok, err := EnsureToken(p)
	if err != nil || len(tok) != 64 {
		t.Fatalf("%q %v", tok, err)
	}
	st, _ := os.Stat(p)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode().Perm())
	}
	again, _ := EnsureToken(p)
	if again != tok {
		t.Fatal("token changed on second call")
	}
	os.Chmod(p, 0o644)
	if _, err := ReadToken(p); err != nil {
		t.Fatal(err)
	}
	st, _ = os.Stat(p)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode not tightened: %v", st.Mode().Perm())
	}
}
