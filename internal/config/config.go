// Package config resolves Mosaic's settings and decides which files it trusts.
//
// Trust model: configuration comes from the process environment, from files in the
// user's config directory ($XDG_CONFIG_HOME/mosaic: the dotenv file "env" and the site
// catalog "sites.yaml", used only when owned by the user and not writable by group or
// others) and from files named on the command line (--env-file, --sites). The working
// directory is never read: a .env or sites.yaml in a repository the user merely cd's
// into is a stranger's file, and could otherwise redirect the API token (MOSAIC_URL)
// or run commands as the user (ssh options such as ProxyCommand).
package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// DefaultAddr is where the core listens unless told otherwise.
const DefaultAddr = "127.0.0.1:8642"

// Names of the files Mosaic reads from its config directory ($XDG_CONFIG_HOME/mosaic).
const (
	EnvFileName   = "env"        // dotenv settings, under the process environment
	SitesFileName = "sites.yaml" // the site catalog used when none is named
)

// pathKeys hold file names; a relative one in a dotenv file is relative to that file's
// directory, never to the working directory. (MOSAIC_DB may instead be a PostgreSQL
// URL, which is no file name: IsPostgresURL.)
var pathKeys = map[string]bool{"MOSAIC_SITES": true, "MOSAIC_DB": true, "MOSAIC_TOKEN_FILE": true}

// Env is a lookup function over the merged environment.
type Env func(key string) (string, bool)

// LoadOptions say where Load may read settings from.
type LoadOptions struct {
	// EnvFile is a dotenv file the user named (--env-file); "" = none. Its settings
	// sit under the process environment and over the config directory's env file.
	EnvFile string
	// Lookup reads the process environment; nil = os.LookupEnv.
	Lookup func(string) (string, bool)
}

// Loaded is the result of Load.
type Loaded struct {
	Env Env
	// Files are the dotenv files read, highest precedence first.
	Files []string
}

// Load returns a lookup over, in order of precedence: the process environment, the
// named EnvFile, and $XDG_CONFIG_HOME/mosaic/env if it exists and passes CheckTrusted.
// Nothing in the working directory is read. A malformed line is an error naming the
// file and line.
func Load(o LoadOptions) (*Loaded, error) {
	lookup := o.Lookup
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var layers []map[string]string
	var files []string
	if o.EnvFile != "" {
		m, err := readEnvFile(o.EnvFile)
		if err != nil {
			return nil, err
		}
		layers, files = append(layers, m), append(files, o.EnvFile)
	}
	if dir, err := ConfigDir(lookup); err == nil {
		p := filepath.Join(dir, EnvFileName)
		if _, err := os.Stat(p); err == nil {
			if err := CheckTrusted(p); err != nil {
				return nil, err
			}
			m, err := readEnvFile(p)
			if err != nil {
				return nil, err
			}
			layers, files = append(layers, m), append(files, p)
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
	}
	env := func(k string) (string, bool) {
		if v, ok := lookup(k); ok {
			return v, true
		}
		for _, m := range layers {
			if v, ok := m[k]; ok {
				return v, true
			}
		}
		return "", false
	}
	return &Loaded{Env: env, Files: files}, nil
}

// readEnvFile parses a dotenv file, making relative file names in pathKeys relative
// to the file's directory.
func readEnvFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read env file: %w", err)
	}
	m, err := ParseDotEnv(path, data)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("env file %s: %w", path, err)
	}
	for k, v := range m {
		if pathKeys[k] && v != "" && !filepath.IsAbs(v) && !strings.HasPrefix(v, "~") && !IsPostgresURL(v) {
			m[k] = filepath.Join(dir, v)
		}
	}
	return m, nil
}

// ConfigDir is $XDG_CONFIG_HOME/mosaic, or ~/.config/mosaic. A relative
// XDG_CONFIG_HOME is ignored (as the XDG spec says), so the directory never depends
// on the working directory.
func ConfigDir(lookup func(string) (string, bool)) (string, error) {
	base, err := xdgDir(lookup, "XDG_CONFIG_HOME", ".config")
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "mosaic"), nil
}

func xdgDir(lookup func(string) (string, bool), key, fallback string) (string, error) {
	if v, _ := lookup(key); v != "" && filepath.IsAbs(v) {
		return v, nil
	}
	home, _ := lookup("HOME")
	if home == "" || !filepath.IsAbs(home) {
		return "", fmt.Errorf("cannot find your home directory: set HOME (or %s) to an absolute path", key)
	}
	return filepath.Join(home, fallback), nil
}

// CheckTrusted refuses a file Mosaic would take from its config directory unless the
// file and its directory are owned by this user and not writable by group or others:
// other local users are not trusted, and a writable catalog or env file would let them
// choose what runs as this user. The error names the path and the command that fixes it.
func CheckTrusted(path string) error {
	uid := os.Getuid()
	for i, p := range []string{path, filepath.Dir(path)} {
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("check %s: %w", p, err)
		}
		if i == 0 && !st.Mode().IsRegular() {
			return fmt.Errorf("refusing %s: it is not a regular file; replace it with your own file", p)
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != uid {
			return fmt.Errorf("refusing %s: it is owned by uid %d, not by you (uid %d), so Mosaic does not trust it; "+
				"remove it or take it over with `chown %d %s` after checking its contents", p, sys.Uid, uid, uid, p)
		}
		if perm := st.Mode().Perm(); perm&0o022 != 0 {
			return fmt.Errorf("refusing %s: it is writable by group or others (mode %04o), so another local user could change "+
				"what Mosaic runs as you; fix it with `chmod go-w %s`", p, perm, p)
		}
	}
	return nil
}

// InWorkDir returns the names among the given ones (e.g. ".env", "sites.yaml") that
// exist in the working directory and are not one of the files in use, so a caller can
// say once that they are ignored. Only their existence is checked, never their contents.
func InWorkDir(inUse []string, names ...string) []string {
	var out []string
	for _, n := range names {
		st, err := os.Stat(n)
		if err != nil {
			continue
		}
		same := false
		for _, u := range inUse {
			if u == "" {
				continue
			}
			if ust, err := os.Stat(u); err == nil && os.SameFile(st, ust) {
				same = true
			}
		}
		if !same {
			out = append(out, "."+string(filepath.Separator)+n)
		}
	}
	return out
}

// ParseDotEnv reads KEY=VALUE lines: blank lines and # comments ignored, optional
// "export " prefix, values optionally in single quotes (literal) or double quotes
// (with \n, \", \\ escapes).
func ParseDotEnv(name string, data []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		s = strings.TrimPrefix(s, "export ")
		k, v, ok := strings.Cut(s, "=")
		k = strings.TrimSpace(k)
		if !ok || !validKey(k) {
			return nil, fmt.Errorf("%s:%d: want KEY=VALUE with a key of letters, digits and '_'", name, line)
		}
		v = strings.TrimSpace(v)
		switch {
		case len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'':
			v = v[1 : len(v)-1]
		case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
			v = strings.NewReplacer(`\n`, "\n", `\"`, `"`, `\\`, `\`).Replace(v[1 : len(v)-1])
		case len(v) > 0 && (v[0] == '"' || v[0] == '\''):
			return nil, fmt.Errorf("%s:%d: %s: unterminated quote", name, line, k)
		default:
			if i := strings.Index(v, " #"); i >= 0 {
				v = strings.TrimSpace(v[:i])
			}
		}
		out[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

func validKey(k string) bool {
	if k == "" {
		return false
	}
	for i, r := range k {
		if r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z') || (i > 0 && r >= '0' && r <= '9') {
			continue
		}
		return false
	}
	return true
}

// IsPostgresURL reports whether a MOSAIC_DB value is a PostgreSQL URL (postgres://…
// or postgresql://…, any case) rather than an SQLite file name.
func IsPostgresURL(v string) bool {
	l := strings.ToLower(v)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// NormalizeDB checks a MOSAIC_DB value and returns it as the store takes it: a
// PostgreSQL URL with its scheme lower-cased (pgx reads only postgres:// and
// postgresql://, and would take POSTGRES://… for a keyword/value string). A libpq
// keyword/value string (`host=… user=… password=…`) is refused — it is no file name,
// and used as one it would create an SQLite file named after the password; the error
// does not repeat the value.
func NormalizeDB(v string) (string, error) {
	if IsPostgresURL(v) {
		scheme, rest, _ := strings.Cut(v, "://")
		return strings.ToLower(scheme) + "://" + rest, nil
	}
	if k, ok := pgKeywordDSN(v); ok {
		return "", fmt.Errorf("MOSAIC_DB looks like a PostgreSQL keyword/value connection string (it sets %s=; value not shown, it may hold a password); "+
			"write it as a URL, postgres://USER:PASSWORD@HOST:PORT/DATABASE?sslmode=…, or give an SQLite file name", k)
	}
	return v, nil
}

// pgKeywords are libpq connection keywords (https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-PARAMKEYWORDS)
// that mark a keyword/value connection string.
var pgKeywords = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true, "password": true, "passfile": true,
	"sslmode": true, "sslrootcert": true, "connect_timeout": true, "application_name": true, "options": true,
	"service": true, "target_session_attrs": true, "sslcert": true, "sslkey": true,
}

// pgKeywordDSN reports whether v has a `keyword=` field (at its start or after
// whitespace, any case, spaces around '=' allowed) for a libpq keyword, and which.
func pgKeywordDSN(v string) (string, bool) {
	for i := 0; i < len(v); {
		for i < len(v) && isSpace(v[i]) {
			i++
		}
		j := i
		for j < len(v) && (v[j] == '_' || v[j] >= 'a' && v[j] <= 'z' || v[j] >= 'A' && v[j] <= 'Z') {
			j++
		}
		k := j
		for k < len(v) && isSpace(v[k]) {
			k++
		}
		if j > i && k < len(v) && v[k] == '=' && pgKeywords[strings.ToLower(v[i:j])] {
			return strings.ToLower(v[i:j]), true
		}
		for i = k; i < len(v) && !isSpace(v[i]); i++ {
		}
	}
	return "", false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// Config is the resolved configuration of one mosaic process.
type Config struct {
	Addr       string        // listen address of the core
	URL        string        // where clients find the core
	Tick       time.Duration // 0 = provider default
	SitesFile  string        // "" = embedded simulated federation
	DBPath     string        // MOSAIC_DB: an SQLite file, ":memory:", or a postgres:// URL (IsPostgresURL)
	TokenPath  string
	StateDir   string
	ConfigDir  string
	SimSpeed   float64 // 0 = catalog/default
	AllowHosts []string
	LogLevel   string
	// NoLearnedWaits (MOSAIC_LEARNED_WAITS=off) ranks and replans on the sites' own
	// start estimates, without the correction learned from the store's history.
	NoLearnedWaits bool
	// EnvFiles are the dotenv files the settings were loaded from (Loaded.Files);
	// the caller sets it. They hold keys, so local look-around never reads them.
	EnvFiles []string
}

// Resolve builds a Config from an Env. SitesFile is MOSAIC_SITES; FindSites adds the
// --sites flag and the config directory's catalog.
func Resolve(env Env) (*Config, error) {
	get := func(k string) string { v, _ := env(k); return v }
	lookup := func(k string) (string, bool) { return env(k) }
	state, err := xdgDir(lookup, "XDG_STATE_HOME", filepath.Join(".local", "state"))
	if err != nil {
		return nil, err
	}
	cfgDir, err := ConfigDir(lookup)
	if err != nil {
		return nil, err
	}
	c := &Config{
		Addr:      DefaultAddr,
		StateDir:  filepath.Join(state, "mosaic"),
		ConfigDir: cfgDir,
		SitesFile: get("MOSAIC_SITES"),
		LogLevel:  get("MOSAIC_LOG_LEVEL"),
	}
	if v := get("MOSAIC_ADDR"); v != "" {
		c.Addr = v
	}
	c.DBPath = filepath.Join(c.StateDir, "mosaic.db")
	if v := get("MOSAIC_DB"); v != "" {
		db, err := NormalizeDB(v)
		if err != nil {
			return nil, err
		}
		c.DBPath = db
	}
	c.TokenPath = filepath.Join(c.ConfigDir, "token")
	if v := get("MOSAIC_TOKEN_FILE"); v != "" {
		c.TokenPath = v
	}
	if v := get("MOSAIC_TICK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 100*time.Millisecond {
			return nil, fmt.Errorf("MOSAIC_TICK=%q: want a duration of at least 100ms, like 5s or 1m", v)
		}
		c.Tick = d
	}
	if v := get("MOSAIC_SIM_SPEED"); v != "" {
		var f float64
		if _, err := fmt.Sscanf(v, "%g", &f); err != nil || f <= 0 {
			return nil, fmt.Errorf("MOSAIC_SIM_SPEED=%q: want a positive number (simulated seconds per real second)", v)
		}
		c.SimSpeed = f
	}
	if v := get("MOSAIC_LEARNED_WAITS"); v != "" {
		switch strings.ToLower(v) {
		case "on", "true", "1", "yes":
		case "off", "false", "0", "no":
			c.NoLearnedWaits = true
		default:
			return nil, fmt.Errorf("MOSAIC_LEARNED_WAITS=%q: want on or off (off ranks on the sites' own estimates, uncorrected)", v)
		}
	}
	if v := get("MOSAIC_ALLOW_HOST"); v != "" {
		c.AllowHosts = append(c.AllowHosts, model.SplitList(v)...)
	}
	c.URL = get("MOSAIC_URL")
	if c.URL == "" {
		c.URL = "http://" + c.Addr
	}
	return c, nil
}

// Where a site catalog came from (Config.SitesSource).
const (
	SitesFromFlag      = "--sites"
	SitesFromEnv       = "MOSAIC_SITES"
	SitesFromConfigDir = "config directory"
	SitesEmbedded      = "embedded"
)

// FindSites decides which site catalog to use, the same way for serve and for the site
// commands: the --sites flag, else MOSAIC_SITES (process environment or a trusted env
// file), else $XDG_CONFIG_HOME/mosaic/sites.yaml if it exists and passes CheckTrusted,
// else none (the embedded simulated federation, returned as ""). A sites.yaml in the
// working directory is never used unless named. It sets c.SitesFile and returns where
// the catalog came from.
func (c *Config) FindSites(flag string) (string, error) {
	switch {
	case flag != "":
		c.SitesFile = flag
		return SitesFromFlag, nil
	case c.SitesFile != "":
		return SitesFromEnv, nil
	}
	p := filepath.Join(c.ConfigDir, SitesFileName)
	if _, err := os.Stat(p); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return SitesEmbedded, nil
		}
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	if err := CheckTrusted(p); err != nil {
		return "", err
	}
	c.SitesFile = p
	return SitesFromConfigDir, nil
}
