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

// fakeEnv is a process environment for Load.
func fakeEnv(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func writeFile(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // umask-proof
		t.Fatal(err)
	}
}

// TestLoadOrder: the process environment wins over --env-file, which wins over the
// config directory's env file; a .env in the working directory is never read.
func TestLoadOrder(t *testing.T) {
	root := t.TempDir()
	cfgHome := filepath.Join(root, "config")
	writeFile(t, filepath.Join(cfgHome, "mosaic", EnvFileName), "A=cfgdir\nB=cfgdir\nC=cfgdir\nMOSAIC_SITES=my-sites.yaml\n", 0o600)
	named := filepath.Join(root, "named", "x.env")
	writeFile(t, named, "A=named\nB=named\nMOSAIC_DB=db/m.db\n", 0o600)
	work := filepath.Join(root, "repo")
	writeFile(t, filepath.Join(work, ".env"), "A=workdir\nB=workdir\nC=workdir\nD=workdir\nMOSAIC_URL=http://127.0.0.1:1\n", 0o644)
	t.Chdir(work)
	proc := map[string]string{"XDG_CONFIG_HOME": cfgHome, "HOME": root, "A": "process"}

	ld, err := Load(LoadOptions{EnvFile: named, Lookup: fakeEnv(proc)})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"A": "process", "B": "named", "C": "cfgdir",
		// relative file names are relative to the file that names them, never to the working directory
		"MOSAIC_SITES": filepath.Join(cfgHome, "mosaic", "my-sites.yaml"),
		"MOSAIC_DB":    filepath.Join(root, "named", "db", "m.db")}
	for k, v := range want {
		if got, _ := ld.Env(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	for _, k := range []string{"D", "MOSAIC_URL"} {
		if v, ok := ld.Env(k); ok {
			t.Errorf("%s = %q: read from the working directory's .env", k, v)
		}
	}
	if len(ld.Files) != 2 || ld.Files[0] != named || ld.Files[1] != filepath.Join(cfgHome, "mosaic", EnvFileName) {
		t.Errorf("files %v", ld.Files)
	}
	cfg, err := Resolve(ld.Env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.URL != "http://"+DefaultAddr {
		t.Errorf("URL %q taken from the working directory", cfg.URL)
	}

	// Without --env-file and config file: only the process environment.
	ld, err = Load(LoadOptions{Lookup: fakeEnv(map[string]string{"HOME": filepath.Join(root, "nobody")})})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := ld.Env("D"); ok || len(ld.Files) != 0 {
		t.Errorf("D=%q files=%v: want nothing read", v, ld.Files)
	}

	// The env file the user names may be the working directory's .env.
	ld, err = Load(LoadOptions{EnvFile: "./.env", Lookup: fakeEnv(proc)})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := ld.Env("D"); v != "workdir" {
		t.Errorf("--env-file ./.env: D=%q", v)
	}
	if got := InWorkDir(ld.Files, ".env", "sites.yaml"); len(got) != 0 {
		t.Errorf("InWorkDir reports the named file as ignored: %v", got)
	}
	if got := InWorkDir(nil, ".env", "sites.yaml"); len(got) != 1 || got[0] != "./.env" {
		t.Errorf("InWorkDir = %v, want [./.env]", got)
	}
	if _, err := Load(LoadOptions{EnvFile: filepath.Join(root, "missing.env"), Lookup: fakeEnv(proc)}); err == nil ||
		!strings.Contains(err.Error(), "missing.env") {
		t.Errorf("a named env file that does not exist: %v", err)
	}
}

// TestConfigDirIgnoresRelativeXDG: XDG_CONFIG_HOME=relative (or no HOME) must never make
// the config directory the working directory.
func TestConfigDirIgnoresRelativeXDG(t *testing.T) {
	d, err := ConfigDir(fakeEnv(map[string]string{"XDG_CONFIG_HOME": "cfg", "HOME": "/h"}))
	if err != nil || d != "/h/.config/mosaic" {
		t.Errorf("relative XDG_CONFIG_HOME: %q %v", d, err)
	}
	for _, m := range []map[string]string{{}, {"HOME": "rel"}, {"XDG_CONFIG_HOME": "cfg"}} {
		if d, err := ConfigDir(fakeEnv(m)); err == nil {
			t.Errorf("%v: got %q, want an error", m, d)
		}
	}
	if _, err := Resolve(Env(fakeEnv(map[string]string{"XDG_CONFIG_HOME": "/c", "XDG_STATE_HOME": "s"}))); err == nil {
		t.Error("relative XDG_STATE_HOME without HOME: want an error")
	}
}

// TestCheckTrusted: files from the config directory are refused when group- or
// world-writable, when their directory is, or when another user owns them; the error
// names the path and the fix.
func TestCheckTrusted(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "mosaic")
	good := filepath.Join(dir, "sites.yaml")
	writeFile(t, good, "systems: []\n", 0o644)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := CheckTrusted(good); err != nil {
		t.Fatalf("0644 file in a 0755 directory: %v", err)
	}
	cases := []struct {
		name      string
		file, dir os.FileMode
		want      string
	}{
		{"group-writable file", 0o664, 0o755, "chmod go-w " + good},
		{"world-writable file", 0o646, 0o755, "chmod go-w " + good},
		{"group-writable directory", 0o644, 0o775, "chmod go-w " + dir},
		{"world-writable directory", 0o600, 0o777, "chmod go-w " + dir},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			os.Chmod(good, c.file)
			os.Chmod(dir, c.dir)
			defer os.Chmod(dir, 0o755)
			err := CheckTrusted(good)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "refusing") {
				t.Fatalf("got %v, want a refusal naming %q", err, c.want)
			}
		})
	}
	os.Chmod(good, 0o644)
	if err := CheckTrusted(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory as a file: %v", err)
	}
	t.Run("other owner", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("only root can give a file to another user")
		}
		if err := os.Chown(good, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		defer os.Chown(good, 0, 0)
		if err := CheckTrusted(good); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Fatalf("got %v, want a refusal naming the owner", err)
		}
	})
}

// TestLoadRefusesUntrustedConfigEnv: a group-writable $XDG_CONFIG_HOME/mosaic/env is an
// error, not silently used or skipped.
func TestLoadRefusesUntrustedConfigEnv(t *testing.T) {
	cfgHome := t.TempDir()
	p := filepath.Join(cfgHome, "mosaic", EnvFileName)
	writeFile(t, p, "MOSAIC_URL=http://127.0.0.1:9\n", 0o660)
	_, err := Load(LoadOptions{Lookup: fakeEnv(map[string]string{"XDG_CONFIG_HOME": cfgHome})})
	if err == nil || !strings.Contains(err.Error(), "chmod go-w "+p) {
		t.Fatalf("got %v, want a refusal with the chmod", err)
	}
	os.Chmod(p, 0o600)
	ld, err := Load(LoadOptions{Lookup: fakeEnv(map[string]string{"XDG_CONFIG_HOME": cfgHome})})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := ld.Env("MOSAIC_URL"); v != "http://127.0.0.1:9" {
		t.Errorf("MOSAIC_URL=%q from the trusted config env file", v)
	}
}

// TestFindSites: --sites, then MOSAIC_SITES, then the config directory's sites.yaml
// (only when trusted), else the embedded federation; never ./sites.yaml.
func TestFindSites(t *testing.T) {
	root := t.TempDir()
	work := filepath.Join(root, "repo")
	writeFile(t, filepath.Join(work, "sites.yaml"), "systems: []\n", 0o644)
	t.Chdir(work)
	cfgHome := filepath.Join(root, "config")
	mk := func(extra map[string]string) *Config {
		m := map[string]string{"XDG_CONFIG_HOME": cfgHome, "XDG_STATE_HOME": filepath.Join(root, "state")}
		for k, v := range extra {
			m[k] = v
		}
		c, err := Resolve(Env(fakeEnv(m)))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	check := func(name string, c *Config, flag, wantPath, wantFrom string) {
		t.Helper()
		from, err := c.FindSites(flag)
		if err != nil || from != wantFrom || c.SitesFile != wantPath {
			t.Errorf("%s: got %q from %q (%v), want %q from %q", name, c.SitesFile, from, err, wantPath, wantFrom)
		}
	}
	check("nothing configured", mk(nil), "", "", SitesEmbedded)
	inCfg := filepath.Join(cfgHome, "mosaic", SitesFileName)
	writeFile(t, inCfg, "systems: []\n", 0o600)
	check("config directory", mk(nil), "", inCfg, SitesFromConfigDir)
	check("MOSAIC_SITES", mk(map[string]string{"MOSAIC_SITES": "/x/env.yaml"}), "", "/x/env.yaml", SitesFromEnv)
	check("flag", mk(map[string]string{"MOSAIC_SITES": "/x/env.yaml"}), "flag.yaml", "flag.yaml", SitesFromFlag)
	check("explicit ./sites.yaml", mk(nil), "./sites.yaml", "./sites.yaml", SitesFromFlag)

	os.Chmod(inCfg, 0o620)
	c := mk(nil)
	if _, err := c.FindSites(""); err == nil || !strings.Contains(err.Error(), "chmod go-w "+inCfg) {
		t.Errorf("group-writable config sites.yaml: %v", err)
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
	if c.NoLearnedWaits {
		t.Errorf("learned waits are off by default")
	}
	for v, off := range map[string]bool{"off": true, "OFF": true, "false": true, "0": true, "no": true, "on": false, "true": false, "1": false, "yes": false} {
		c, err := Resolve(env(map[string]string{"XDG_STATE_HOME": "/s", "XDG_CONFIG_HOME": "/c", "MOSAIC_LEARNED_WAITS": v}))
		if err != nil || c.NoLearnedWaits != off {
			t.Errorf("MOSAIC_LEARNED_WAITS=%s: NoLearnedWaits %v, err %v; want %v", v, c != nil && c.NoLearnedWaits, err, off)
		}
	}
	for _, bad := range []map[string]string{{"MOSAIC_TICK": "fast"}, {"MOSAIC_TICK": "1ms"}, {"MOSAIC_SIM_SPEED": "-1"}, {"MOSAIC_LEARNED_WAITS": "maybe"}, {"MOSAIC_LEARNED_WAITS": " "}} {
		if _, err := Resolve(env(bad)); err == nil {
			t.Errorf("%v: want error", bad)
		}
	}
}

// TestNormalizeDB: a PostgreSQL URL's scheme is lower-cased for pgx; a libpq
// keyword/value string is refused without repeating it (it may hold a password).
func TestNormalizeDB(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"POSTGRES://u:p@h:5432/db", "postgres://u:p@h:5432/db"},
		{"PostgreSQL://u@h/DB?sslmode=disable", "postgresql://u@h/DB?sslmode=disable"},
		{"postgres://u@h/db", "postgres://u@h/db"},
		{"/var/lib/mosaic/mosaic.db", "/var/lib/mosaic/mosaic.db"},
		{":memory:", ":memory:"},
		{"/data/a=b.db", "/data/a=b.db"},
		{"/data/hostname=x.db", "/data/hostname=x.db"},
		{"", ""},
	} {
		got, err := NormalizeDB(c.in)
		if err != nil || got != c.want {
			t.Errorf("NormalizeDB(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{
		"host=db.example.org user=mosaic password=s3cretpw dbname=mosaic",
		"  dbname = mosaic password=s3cretpw",
		"user=mosaic\tpassword=s3cretpw",
		"HOST=localhost",
		"sslmode=require password=s3cretpw",
	} {
		_, err := NormalizeDB(in)
		if err == nil || !strings.Contains(err.Error(), "postgres://") || strings.Contains(err.Error(), "s3cretpw") {
			t.Errorf("NormalizeDB(%q): %v; want a refusal pointing to the URL form, without the password", in, err)
		}
	}
	env := func(k string) (string, bool) {
		if k == "MOSAIC_DB" {
			return "host=h password=s3cretpw", true
		}
		return "", false
	}
	if _, err := Resolve(env); err == nil || strings.Contains(err.Error(), "s3cretpw") {
		t.Errorf("Resolve with a keyword/value MOSAIC_DB: %v", err)
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

func FuzzNormalizeDB(f *testing.F) {
	for _, s := range []string{"POSTGRES://u:p@h/db", "host=h password=p", "/a/b.db", " user = x", "a=b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, err := NormalizeDB(v)
		if err != nil {
			if got != "" || strings.Contains(err.Error(), v) && len(v) > 12 {
				t.Fatalf("NormalizeDB(%q) = %q, %v: a refusal returns nothing and does not repeat the value", v, got, err)
			}
			return
		}
		if again, err := NormalizeDB(got); err != nil || again != got {
			t.Fatalf("not a fixed point: %q -> %q -> %q, %v", v, got, again, err)
		}
		if !IsPostgresURL(v) && got != v {
			t.Fatalf("a file name changed: %q -> %q", v, got)
		}
		if IsPostgresURL(v) && !strings.HasPrefix(got, "postgres") {
			t.Fatalf("scheme not lower-cased: %q -> %q", v, got)
		}
	})
}
