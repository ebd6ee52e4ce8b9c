package hpc

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/site"

	"github.com/mosaic-hpc/mosaic/internal/transport"
)

// SiteEnv is what a look-around sees on a login node.
type SiteEnv struct {
	Host              string   `json:"host"`
	User              string   `json:"user"`
	WorkDir           string   `json:"workdir"`
	WorkDirExists     bool     `json:"workdir_exists"`
	Python            string   `json:"python,omitempty"` // "Python 3.11.2"
	Torch             string   `json:"torch,omitempty"`  // torch.__version__ if importable
	ContainerRuntimes []string `json:"container_runtimes,omitempty"`
	ModuleCount       int      `json:"module_count"`
	Modules           []string `json:"modules,omitempty"` // the first MaxModules of `module -t avail`
	Associations      []string `json:"associations,omitempty"`
}

// MaxModules bounds the module names SiteEnv keeps.
const MaxModules = 60

// Bounds of the look-around calls on a login node: the environment probe (Env) and
// one read-only command (Exec). The core's HTTP client waits longer than both.
const (
	EnvTimeout  = 90 * time.Second
	ExecTimeout = 30 * time.Second
)

// envScript gathers everything in one remote call. It is a constant; the workdir is
// passed as $1. Each probe is bounded with timeout(1) where it may be slow.
const envScript = `echo @@host; hostname
echo @@user; id -un
echo @@workdir; if [ -d "$1" ]; then echo exists; else echo missing; fi
echo @@python; python3 --version 2>&1 | head -1
echo @@torch; timeout 20 python3 -c 'import torch; print(torch.__version__)' 2>/dev/null | head -1
echo @@containers; for c in apptainer singularity podman charliecloud; do command -v "$c" >/dev/null 2>&1 && echo "$c"; done
echo @@modules; timeout 20 bash -lc 'type module >/dev/null 2>&1 && module -t avail 2>&1' 2>/dev/null | grep -v -e ':$' -e '^$' | head -2000
echo @@assoc; command -v sacctmgr >/dev/null 2>&1 && timeout 20 sacctmgr -n -P show assoc user="$(id -un)" format=cluster,account,partition,qos 2>&1 | head -200
echo @@end
exit 0`

// Env reports the site's host, user, workdir, Python/PyTorch versions, container
// runtimes, available modules and Slurm associations, in one remote call.
func (p *Provider) Env(ctx context.Context) (SiteEnv, error) {
	ctx, cancel := context.WithTimeout(ctx, EnvTimeout)
	defer cancel()
	out, err := p.run(ctx, []string{"sh", "-c", envScript, "sh", p.sys.WorkDir}, nil)
	if err != nil {
		return SiteEnv{}, err
	}
	if out.ExitCode != 0 {
		return SiteEnv{}, fmt.Errorf("%s: environment probe: %s", p.sys.Name, strings.TrimSpace(string(out.Stderr)))
	}
	env, err := ParseEnv(out.Stdout)
	if err != nil {
		return SiteEnv{}, fmt.Errorf("%s: %w", p.sys.Name, err)
	}
	env.WorkDir = p.sys.WorkDir
	return env, nil
}

// ParseEnv reads envScript's sectioned output.
func ParseEnv(b []byte) (SiteEnv, error) {
	sections := map[string][]string{}
	cur := ""
	ended := false
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimRight(l, "\r")
		if strings.HasPrefix(l, "@@") {
			cur = l[2:]
			if cur == "end" {
				ended = true
			}
			continue
		}
		if cur == "" || strings.TrimSpace(l) == "" {
			continue
		}
		sections[cur] = append(sections[cur], strings.TrimSpace(l))
	}
	if !ended {
		return SiteEnv{}, errors.New("environment probe output is incomplete (no end marker)")
	}
	first := func(k string) string {
		if v := sections[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	env := SiteEnv{Host: first("host"), User: first("user"), WorkDirExists: first("workdir") == "exists",
		Python: first("python"), Torch: first("torch"), ContainerRuntimes: sections["containers"],
		Associations: sections["assoc"]}
	if !strings.HasPrefix(env.Python, "Python ") {
		env.Python = ""
	}
	mods := sections["modules"]
	env.ModuleCount = len(mods)
	if len(mods) > MaxModules {
		mods = mods[:MaxModules]
	}
	env.Modules = mods
	return env, nil
}

// ExecResult is what a look-around command printed.
type ExecResult struct {
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	ExitCode  int    `json:"exit_code"`
	Truncated bool   `json:"truncated"`
}

// Exec runs one allowlisted read-only command (see CheckExec) with a 30-second limit,
// returning at most MaxExecOutput bytes of each stream. It runs in the system's
// workdir through execScript, which resolves on the site every path the command
// reads and refuses it there when a symlink leads to secrets or out of the workdir.
// Refusals are *RefusedError.
func (p *Provider) Exec(ctx context.Context, argv []string) (ExecResult, error) {
	pol := p.execPolicy()
	plan, err := CheckExec(argv, pol)
	if err != nil {
		return ExecResult{}, err
	}
	var nb [12]byte
	if _, err := rand.Read(nb[:]); err != nil {
		return ExecResult{}, fmt.Errorf("%s: exec: %w", p.sys.Name, err)
	}
	nonce := "mosaic-refused-" + hex.EncodeToString(nb[:])
	ctx, cancel := context.WithTimeout(ctx, ExecTimeout)
	defer cancel()
	res, err := p.tr.Run(ctx, siteArgv(plan, pol, nonce), nil)
	if res.ExitCode == 125 {
		if why, ok := strings.CutPrefix(string(res.Stderr), nonce+" "); ok {
			return ExecResult{}, &RefusedError{Kind: RefusedForbidden, Reason: "on the site: " + strings.TrimSpace(why)}
		}
	}
	r := ExecResult{ExitCode: res.ExitCode}
	r.Stdout, r.Truncated = capText(res.Stdout)
	var t2 bool
	r.Stderr, t2 = capText(res.Stderr)
	r.Truncated = r.Truncated || t2
	if err != nil {
		if errors.Is(err, transport.ErrOutputTooLarge) {
			r.Truncated = true
			return r, nil
		}
		return r, fmt.Errorf("%s: %s: %w", p.sys.Name, argv[0], err)
	}
	return r, nil
}

// execPolicy is the look-around policy of this system. On a local site the core's
// home and its own files are known here and protected by path too: the paths the
// core resolved from its configuration (WithProtected), and what the process
// environment names.
func (p *Provider) execPolicy() ExecPolicy {
	pol := ExecPolicy{WorkDir: p.sys.WorkDir}
	if pol.WorkDir != "" {
		pol.WorkDir = path.Clean(pol.WorkDir)
	}
	if p.kind == site.KindLocal {
		pol.Home, _ = os.UserHomeDir()
		seen := map[string]bool{}
		for _, d := range append(append([]string{}, p.protected...), localProtected(os.Getenv)...) {
			if d = path.Clean(d); path.IsAbs(d) && d != "/" && !seen[d] {
				seen[d] = true
				pol.Protected = append(pol.Protected, d)
			}
		}
	}
	return pol
}

// localProtected are Mosaic's own paths on this host: $XDG_CONFIG_HOME/mosaic,
// $XDG_STATE_HOME/mosaic, MOSAIC_TOKEN_FILE and MOSAIC_DB (with its journal files).
func localProtected(getenv func(string) string) []string {
	var out []string
	for _, k := range []string{"XDG_CONFIG_HOME", "XDG_STATE_HOME"} {
		if v := getenv(k); path.IsAbs(v) {
			out = append(out, path.Join(v, "mosaic"))
		}
	}
	if v := getenv("MOSAIC_TOKEN_FILE"); path.IsAbs(v) {
		out = append(out, path.Clean(v))
	}
	if v := getenv("MOSAIC_DB"); path.IsAbs(v) {
		v = path.Clean(v)
		out = append(out, v, v+"-wal", v+"-shm", v+"-journal")
	}
	return out
}

func capText(b []byte) (string, bool) {
	if len(b) > MaxExecOutput {
		return string(b[:MaxExecOutput]), true
	}
	return string(b), false
}

// putScript writes stdin to $2 after checking, on the site, that neither the target
// nor any existing ancestor directory resolves outside the workdir $1 (symlinks).
const putScript = `set -eu
mkdir -p "$1"
root=$(cd "$1" && pwd -P)
dir=$(dirname "$2")
d=$dir
while [ ! -e "$d" ]; do d=$(dirname "$d"); done
real=$(cd "$d" && pwd -P)
case "$real/" in "$root"/*) ;; *) echo "$d resolves to $real, outside the workdir $root" >&2; exit 3;; esac
if [ -L "$2" ]; then echo "$2 is a symbolic link; remove it or choose another name" >&2; exit 3; fi
if [ -e "$2" ] && [ ! -f "$2" ]; then echo "$2 exists and is not a regular file; remove it or choose another name" >&2; exit 4; fi
mkdir -p "$dir"
real=$(cd "$dir" && pwd -P)
case "$real/" in "$root"/*) ;; *) echo "$dir resolves to $real, outside the workdir $root" >&2; exit 3;; esac
cat > "$2"`

// putScript's refusal exit codes: 3 (outside the workdir, a symlink), 4 (the target
// exists and is not a regular file). Anything else is the site failing.
const (
	putExitForbidden = 3
	putExitConflict  = 4
)

// PutFile writes data (at most 2 MiB) to name inside the system's workdir and returns
// the absolute site path. Paths with "..", outside the workdir, or reaching outside
// it through a symlink are refused with a *RefusedError (also when the site refuses).
func (p *Provider) PutFile(ctx context.Context, name string, data []byte) (string, error) {
	dst, err := CleanPutPath(p.sys.WorkDir, name, len(data))
	if err != nil {
		return "", err
	}
	out, err := p.run(ctx, []string{"sh", "-c", putScript, "sh", p.sys.WorkDir, dst}, bytes.NewReader(data))
	if err != nil {
		return "", err
	}
	switch out.ExitCode {
	case 0:
		return dst, nil
	case putExitForbidden:
		return "", refuse(RefusedForbidden, "%s: %s", p.sys.Name, strings.TrimSpace(string(out.Stderr)))
	case putExitConflict:
		return "", refuse(RefusedConflict, "%s: %s", p.sys.Name, strings.TrimSpace(string(out.Stderr)))
	}
	return "", fmt.Errorf("%s: put %s: %s", p.sys.Name, dst, strings.TrimSpace(string(out.Stderr)))
}
