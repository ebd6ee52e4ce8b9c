package campaign

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
	"github.com/mosaic-hpc/mosaic/internal/transport/shellquote"
)

// Backend brings up one site's slice and takes it down.
type Backend interface {
	// Site is the site's name.
	Site() string
	// Start launches the slice. Anything the user may need to clean up by hand
	// (a job id, a pid) is persisted to the run directory before Start returns.
	Start(ctx context.Context) error
	// Poll reports the slice's state; final is true once it will not change.
	// A slice that died returns an error carrying its log's tail.
	Poll(ctx context.Context) (state string, final bool, err error)
	// Stop ends the slice (idempotent); no job or process of it is left.
	Stop(ctx context.Context) error
	// Close releases connections.
	Close() error
}

// SiteLaunch is what both backends need to run a slice on a site.
type SiteLaunch struct {
	Spec       SiteSpec
	RunID      string
	Campaign   string            // campaign file path on the site
	MosaicBin  string            // mosaic binary on the site
	Exchange   string            // exchange URL as the site's compute nodes see it
	Tokens     map[string]string // agent name -> its own exchange token, this slice only (written 0600 on the site)
	Startup    time.Duration
	SpawnArgs  []string          // extra spawn-site arguments, appended last
	Forward    map[string]string // environment exported before the env script
	EnvScript  string            // sourced on the compute node after the exports
	Dir        *RunDir
	Out        io.Writer // progress lines
	Color      bool      // paint state transitions in Out
	StepPrefix string    // step/job name prefix; "" = "mosaic-c"
	// SubmitTimeout bounds a submit-mode site's submit (0 = 2 minutes); the job may
	// be queued even when it runs out, so what follows does not depend on it.
	SubmitTimeout time.Duration
}

var tagUnsafe = regexp.MustCompile(`[^A-Za-z0-9._+-]`)

// jobName is the batch job / srun step name of a run's slice on a site.
func (l *SiteLaunch) jobName() string {
	p := l.StepPrefix
	if p == "" {
		p = "mosaic-c"
	}
	n := p + "-" + l.RunID + "-" + l.Spec.Name
	n = tagUnsafe.ReplaceAllString(n, "_")
	if len(n) > 120 {
		n = n[:120]
	}
	return n
}

// remoteDir is the site directory of the run's slice (relative paths resolve
// against the login directory).
func (l *SiteLaunch) remoteDir(sysWorkDir string) string {
	base := l.Spec.WorkDir
	if base == "" {
		base = sysWorkDir
	}
	if base == "" {
		base = ".mosaic"
	}
	return strings.TrimRight(base, "/") + "/mosaic-campaigns/" + l.RunID + "/" + tagUnsafe.ReplaceAllString(l.Spec.Name, "_")
}

// prepareScript creates the site directory, opens the log before anything
// else can fail, stores the slice's agent tokens (0600, read from stdin; the
// run's operator token never reaches a site) and prints the absolute
// directory.
const prepareScript = `umask 077 && mkdir -p "$1" && cd "$1" && : >> site.log && rm -f token && cat > tokens && pwd -P`

// tokensFile renders the slice's tokens for the site's tokens file.
func (l *SiteLaunch) tokensFile() string { return FormatTokens(l.Tokens, l.Spec.Agents) }

// spawnArgv is the spawn-site command the slice runs.
func (l *SiteLaunch) spawnArgv() []string {
	a := []string{l.MosaicBin, "campaign", "spawn-site",
		"--campaign", l.Campaign, "--run-id", l.RunID, "--site", l.Spec.Name,
		"--agents", strings.Join(l.Spec.Agents, ","),
		"--exchange-url", l.Exchange, "--tokens-file", "tokens",
		"--startup-timeout", strconv.Itoa(int(l.Startup/time.Second)) + "s"}
	return append(a, l.SpawnArgs...)
}

// innerScript runs on the compute node: into the site log (logHere; attach
// mode's outer script has already redirected), forwarded exports (so the env
// script may use them), then the env script, checked (dialect.SourceEnvScript:
// a failure or an `exit` in it writes "mosaic: env script X failed (exit N)" to
// site.log and ends the slice with status 1, before any agent starts), then
// spawn-site with exec so that signals reach the agents. dir is the absolute
// site directory. withEnv=false leaves the forwarded exports to the batch
// script (submit mode: they travel in JobSpec.Env, which the store never keeps,
// and are exported by the dialect before this script runs; an export prints
// nothing unless it names one of bash's read-only variables, such as UID); extra
// are exported in any case.
func (l *SiteLaunch) innerScript(dir string, logHere, withEnv bool, extra map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cd %s || exit 1\n", shellquote.Quote(dir))
	if logHere {
		b.WriteString("exec >> site.log 2>&1\n")
	}
	b.WriteString(`echo "mosaic: slice starting on $(hostname) at $(date -u +%FT%TZ)"` + "\n")
	env := map[string]string{}
	if withEnv {
		for k, v := range l.Forward {
			env[k] = v
		}
	}
	for k, v := range extra {
		env[k] = v
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "export %s=%s\n", k, shellquote.Quote(env[k]))
	}
	b.WriteString(dialect.SourceEnvScript(l.EnvScript))
	b.WriteString("unset MOSAIC_EXCHANGE_TOKEN\n") // each agent gets its own, from the tokens file
	b.WriteString("echo $$ > pid\n")
	b.WriteString("exec " + shellquote.Join(l.spawnArgv()...) + "\n")
	return b.String()
}

func (l *SiteLaunch) printf(format string, args ...any) {
	if l.Out != nil {
		fmt.Fprintf(l.Out, "%s: %s\n", l.Spec.Name, fmt.Sprintf(format, args...))
	}
}

// envKeyOK reports whether k can be exported by a shell.
func envKeyOK(k string) bool { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`).MatchString(k) }
