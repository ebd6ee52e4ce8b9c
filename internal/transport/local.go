package transport

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
)

// Local runs commands on this host. Use it when Mosaic runs on the login node itself.
//
// Commands get a clean environment, not this process's: Mosaic's own environment holds
// API keys and tokens (MOSAIC_LLM_API_KEY, GLOBUS_CLIENT_SECRET, ...), and a command
// could print them, or sbatch/qsub would export them into every job by default. Only
// the variables in LocalPassthrough are kept, then Env is added.
type Local struct {
	// Env is added to the clean environment (e.g. "SLURM_CONF=/etc/slurm/x.conf");
	// it is what the site configuration explicitly sets.
	Env []string
	// Dir is the working directory; "" means the current one.
	Dir string
	Limits
}

// LocalPassthrough are the variables a local command inherits from Mosaic's
// environment: the login basics, and what Slurm, PBS and environment modules need
// to find their configuration. Everything else (keys, tokens, proxies) is dropped.
var LocalPassthrough = []string{
	"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR",
	// Slurm: which cluster configuration the client commands read.
	"SLURM_CONF",
	// PBS Pro / OpenPBS: pbs.conf location and install prefix.
	"PBS_CONF_FILE", "PBS_EXEC", "PBS_HOME", "PBS_SERVER",
	// Environment modules (Lmod, Tcl modules): where modules live.
	"MODULEPATH", "MODULESHOME", "LMOD_CMD", "LMOD_DIR", "LMOD_PKG", "LMOD_ROOT", "LMOD_SYSTEM_NAME",
	// Kerberos ticket cache location (a path, not the ticket): Kerberised file systems.
	"KRB5CCNAME",
}

// CleanEnv returns the variables of environ (KEY=VALUE) named in LocalPassthrough,
// then extra. A later entry for a key replaces an earlier one.
func CleanEnv(environ, extra []string) []string {
	keep := make(map[string]bool, len(LocalPassthrough))
	for _, k := range LocalPassthrough {
		keep[k] = true
	}
	var out []string
	for _, kv := range environ {
		if k, _, ok := strings.Cut(kv, "="); ok && keep[k] {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}

// Run executes argv[0] with argv[1:] directly (no shell), in a clean environment.
func (l *Local) Run(ctx context.Context, argv []string, stdin io.Reader) (Result, error) {
	if len(argv) == 0 {
		return Result{}, errors.New("local transport: empty command")
	}
	return runProcess(ctx, l.Limits, argv[0], argv[1:], CleanEnv(os.Environ(), l.Env), l.Dir, stdin)
}
