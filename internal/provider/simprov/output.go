package simprov

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
)

var (
	_ provider.OutputLocator = (*Provider)(nil)
	_ provider.OutputReader  = (*Provider)(nil)
)

// Output is where the job with id jobID writes: <workdir>/<system>/<jobid>/{stdout,stderr}
// on this host.
func (p *Provider) Output(_ model.JobSpec, jobID string) (model.JobOutput, error) {
	id, err := strconv.ParseInt(strings.TrimSpace(jobID), 10, 64)
	if err != nil {
		return model.JobOutput{}, fmt.Errorf("sim %s: job id %q is not a number", p.sys.Name, jobID)
	}
	dir := p.jobDir(id)
	return model.JobOutput{Host: "localhost", Stdout: filepath.Join(dir, "stdout"), Stderr: filepath.Join(dir, "stderr")}, nil
}

// ReadOutput tails a recorded output location (default 16 KiB, at most 1 MiB per file).
// Like a real site it fails with provider.ErrSiteDown during a simulated outage. Only
// job output files are read: absolute, clean paths ending in /stdout and /stderr.
func (p *Provider) ReadOutput(ctx context.Context, out model.JobOutput, tail int) (model.Logs, error) {
	l := model.Logs{StdoutPath: out.Stdout, StderrPath: out.Stderr}
	for _, f := range []struct{ path, name string }{{out.Stdout, "stdout"}, {out.Stderr, "stderr"}} {
		if !filepath.IsAbs(f.path) || filepath.Clean(f.path) != f.path || filepath.Base(f.path) != f.name {
			return l, fmt.Errorf("sim %s: %q is not a simulated job's %s file (want <workdir>/<system>/<jobid>/%s)", p.sys.Name, f.path, f.name, f.name)
		}
	}
	p.mu.Lock()
	if !p.closed {
		p.advanceLocked() // the outage windows are in model time
	}
	down := p.reachable("reading job output")
	p.mu.Unlock()
	if down != nil {
		return l, down
	}
	if err := ctx.Err(); err != nil {
		return l, err
	}
	if tail <= 0 {
		tail = DefaultLogTail
	}
	tail = min(tail, maxLogTail)
	var t1, t2 bool
	var err error
	if l.Stdout, t1, err = readTail(out.Stdout, tail); err != nil {
		return l, fmt.Errorf("sim %s: %s: %w", p.sys.Name, out.Stdout, err)
	}
	if l.Stderr, t2, err = readTail(out.Stderr, tail); err != nil {
		return l, fmt.Errorf("sim %s: %s: %w", p.sys.Name, out.Stderr, err)
	}
	l.Truncated = t1 || t2
	if !exists(out.Stdout) && !exists(out.Stderr) {
		return l, fmt.Errorf("sim %s: %s and %s: %w", p.sys.Name, out.Stdout, out.Stderr, provider.ErrNoOutput)
	}
	return l, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, os.ErrNotExist)
}
