// Package config resolves Mosaic's settings: MOSAIC_* environment variables, a .env
// file in the working directory (real environment variables win), and XDG paths.
package config

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultAddr is where the core listens unless told otherwise.
const DefaultAddr = "127.0.0.1:8642"

// Env is a lookup function over the merged environment.
type Env func(key string) (string, bool)

// LoadEnv returns a lookup over the process environment layered on a .env file in dir
// (if present). A malformed .env line is an error naming the file and line.
func LoadEnv(dir string) (Env, error) {
	file := map[string]string{}
	path := filepath.Join(dir, ".env")
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if err == nil {
		file, err = ParseDotEnv(path, data)
		if err != nil {
			return nil, err
		}
	}
	return func(k string) (string, bool) {
		if v, ok := os.LookupEnv(k); ok {
			return v, true
		}
		v, ok := file[k]
		return v, ok
	}, nil
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

// Config is the resolved configuration of one mosaic process.
type Config struct {
	Addr       string        // listen address of the core
	URL        string        // where clients find the core
	Tick       time.Duration // 0 = provider default
	SitesFile  string        // "" = embedded simulated federation
	DBPath     string
	TokenPath  string
	StateDir   string
	ConfigDir  string
	SimSpeed   float64 // 0 = catalog/default
	AllowHosts []string
	LogLevel   string
}

// Resolve builds a Config from an Env.
func Resolve(env Env) (*Config, error) {
	get := func(k string) string { v, _ := env(k); return v }
	home, _ := os.UserHomeDir()
	state := get("XDG_STATE_HOME")
	if state == "" {
		state = filepath.Join(home, ".local", "state")
	}
	cfgHome := get("XDG_CONFIG_HOME")
	if cfgHome == "" {
		cfgHome = filepath.Join(home, ".config")
	}
	c := &Config{
		Addr:      DefaultAddr,
		StateDir:  filepath.Join(state, "mosaic"),
		ConfigDir: filepath.Join(cfgHome, "mosaic"),
		SitesFile: get("MOSAIC_SITES"),
		LogLevel:  get("MOSAIC_LOG_LEVEL"),
	}
	if v := get("MOSAIC_ADDR"); v != "" {
		c.Addr = v
	}
	c.DBPath = filepath.Join(c.StateDir, "mosaic.db")
	if v := get("MOSAIC_DB"); v != "" {
		c.DBPath = v
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
	if v := get("MOSAIC_ALLOW_HOST"); v != "" {
		for _, h := range strings.Split(v, ",") {
			if h = strings.TrimSpace(h); h != "" {
				c.AllowHosts = append(c.AllowHosts, h)
			}
		}
	}
	c.URL = get("MOSAIC_URL")
	if c.URL == "" {
		c.URL = "http://" + c.Addr
	}
	return c, nil
}
