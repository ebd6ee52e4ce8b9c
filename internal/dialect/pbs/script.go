package pbs

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/transport/shellquote"
)

var scriptTmpl = template.Must(template.New("pbs").Funcs(template.FuncMap{"q": shellquote.Quote}).Parse(
	`#!/bin/bash
#PBS -S /bin/bash
#PBS -N {{.Tag}}
#PBS -q {{.Partition}}
{{- if .Account}}
#PBS -A {{.Account}}{{end}}
#PBS -l select={{.Select}}
#PBS -l walltime={{.Walltime}}
#PBS -l place={{.Place}}
{{- if .Filesystems}}
#PBS -l filesystems={{.Filesystems}}{{end}}
#PBS -o {{.Stdout}}
#PBS -e {{.Stderr}}
# Rendered by Mosaic for task {{q .Name}}; the job name is Mosaic's idempotency tag.
{{range .Env}}export {{.K}}={{q .V}}
{{end -}}
cd {{if .WorkDir}}{{q .WorkDir}}{{else}}"$PBS_O_WORKDIR"{{end}} || exit 1
{{.SourceEnv}}
{{- if .Runtime}}exec {{.Runtime}} exec{{if .GPUs}} --nv{{end}} {{q .Image}} /bin/bash -c {{q .Body}}
{{else}}{{.Body}}
{{end}}`))

type kv struct{ K, V string }

var (
	wordRe   = regexp.MustCompile(`^[A-Za-z0-9._+-]+$`)
	fsRe     = regexp.MustCompile(`^[A-Za-z0-9_:-]+$`)
	envKeyRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// RenderScript renders spec as a PBS script. filesystems, when set, adds
// `-l filesystems=` (required at some sites, e.g. ALCF); envScript is sourced first,
// checked: when it fails the job ends with "mosaic: env script … failed (exit N)" on
// its stderr and the command does not run (dialect.SourceEnvScript). A spec with
// NoSiteEnvScript sources it itself. The job runs under bash (-S /bin/bash):
// OpenPBS ignores the #! line and uses the user's login shell unless -S is given,
// and the rendered lines (exports, the command, a Script body) are bash.
func RenderScript(spec model.JobSpec, files dialect.JobFiles, envScript, filesystems string) ([]byte, error) {
	// Validate also refuses control characters in every spec field (model.CheckLine,
	// CheckText): the API refuses them first, this is the second line of defence.
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	for what, v := range map[string]string{"env script": envScript, "stdout path": files.Stdout, "stderr path": files.Stderr, "filesystems": filesystems} {
		if err := model.CheckLine(what, v, model.MaxLineChars); err != nil {
			return nil, fmt.Errorf("job spec %s: %w", spec.Tag, err)
		}
	}
	if !wordRe.MatchString(spec.Tag) || !wordRe.MatchString(spec.Partition) || (spec.Account != "" && !wordRe.MatchString(spec.Account)) {
		return nil, fmt.Errorf("job spec %s: tag, queue and account may only contain letters, digits and ._+-", spec.Tag)
	}
	if len(spec.Tag) > 236 {
		return nil, fmt.Errorf("job spec %s: job name too long for PBS", spec.Tag)
	}
	if filesystems != "" && !fsRe.MatchString(filesystems) {
		return nil, fmt.Errorf("job spec %s: filesystems %q: want names joined by ':'", spec.Tag, filesystems)
	}
	if files.Stdout == "" || files.Stderr == "" {
		return nil, fmt.Errorf("job spec %s: stdout and stderr paths are required", spec.Tag)
	}
	for what, v := range map[string]string{"stdout path": files.Stdout, "stderr path": files.Stderr} {
		if strings.ContainsAny(v, " \t\r\n\"'\\:") {
			return nil, fmt.Errorf("job spec %s: %s %q: whitespace, quotes, backslashes and ':' are not allowed in #PBS values", spec.Tag, what, v)
		}
	}
	nodes := spec.Nodes
	ntasks := max(spec.NTasks, 1)
	cpusPer := (ntasks*max(spec.CPUsPerTask, 1) + nodes - 1) / nodes
	chunk := []string{strconv.Itoa(nodes), "ncpus=" + strconv.Itoa(cpusPer)}
	if spec.GPUs > 0 {
		g := spec.GPUsPerNode
		if g <= 0 {
			g = (spec.GPUs + nodes - 1) / nodes
		}
		chunk = append(chunk, "ngpus="+strconv.Itoa(g))
	}
	if spec.MemoryGB > 0 {
		chunk = append(chunk, "mem="+strconv.Itoa(spec.MemoryGB)+"gb")
	}
	chunk = append(chunk, "mpiprocs="+strconv.Itoa((ntasks+nodes-1)/nodes))
	place := "free"
	if nodes > 1 {
		place = "scatter"
	}
	d := struct {
		model.JobSpec
		Select, Walltime, Place, Filesystems, Stdout, Stderr, SourceEnv, Body, Runtime, Image string
		Env                                                                                   []kv
	}{JobSpec: spec, Select: strings.Join(chunk, ":"), Walltime: FormatWalltime(spec.Walltime), Place: place,
		Filesystems: filesystems, Stdout: files.Stdout, Stderr: files.Stderr, Body: spec.Command}
	if !spec.NoSiteEnvScript {
		d.SourceEnv = dialect.SourceEnvScript(envScript)
	}
	keys := make([]string, 0, len(spec.Env))
	for k := range spec.Env {
		if !envKeyRe.MatchString(k) {
			return nil, fmt.Errorf("job spec %s: environment variable name %q is not a valid shell name", spec.Tag, k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d.Env = append(d.Env, kv{k, spec.Env[k]})
	}
	if spec.Script != "" {
		body := spec.Script
		if strings.HasPrefix(body, "#!") {
			_, body, _ = strings.Cut(body, "\n")
		}
		d.Body = strings.TrimRight(body, "\n")
	}
	if c := spec.Container; c != nil {
		rt, err := model.ScriptRuntime(c)
		if err != nil {
			return nil, fmt.Errorf("job spec %s: %w", spec.Tag, err)
		}
		if c.Image == "" {
			return nil, fmt.Errorf("job spec %s: container image is empty", spec.Tag)
		}
		d.Runtime, d.Image = model.RuntimeCommand(rt), c.Image
	}
	var b bytes.Buffer
	if err := scriptTmpl.Execute(&b, d); err != nil {
		return nil, fmt.Errorf("render PBS script for %s: %w", spec.Tag, err)
	}
	return b.Bytes(), nil
}
