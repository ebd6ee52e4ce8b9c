package slurm

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/transport/shellquote"
)

var scriptTmpl = template.Must(template.New("sbatch").Funcs(template.FuncMap{"q": shellquote.Quote}).Parse(
	`#!/bin/bash
#SBATCH --job-name={{.Tag}}
#SBATCH --partition={{.Partition}}
{{- if .Account}}
#SBATCH --account={{.Account}}{{end}}
#SBATCH --nodes={{.Nodes}}
{{- if .NTasks}}
#SBATCH --ntasks={{.NTasks}}{{end}}
{{- if .CPUsPerTask}}
#SBATCH --cpus-per-task={{.CPUsPerTask}}{{end}}
{{- if .MemoryGB}}
#SBATCH --mem={{.MemoryGB}}G{{end}}
{{- if .Gres}}
#SBATCH --gres={{.Gres}}{{end}}
#SBATCH --time={{.Time}}
{{- if .Nice}}
#SBATCH --nice={{.Nice}}{{end}}
#SBATCH --output={{.Stdout}}
#SBATCH --error={{.Stderr}}
{{- if .WorkDir}}
#SBATCH --chdir={{.WorkDir}}{{end}}
#SBATCH --export=ALL
# Rendered by Mosaic for task {{q .Name}}; the job name is Mosaic's idempotency tag.
{{range .Env}}export {{.K}}={{q .V}}
{{end -}}
{{- if .WorkDir}}cd {{q .WorkDir}} || exit 1
{{end -}}
{{.SourceEnv}}
{{- if .Container}}exec {{.Runtime}} exec{{if .Gres}} --nv{{end}} {{q .Image}} /bin/bash -c {{q .Body}}
{{else}}{{.Body}}
{{end}}`))

type kv struct{ K, V string }

type scriptData struct {
	model.JobSpec
	Gres, Time, Stdout, Stderr, SourceEnv, Body, Runtime, Image string
	Env                                                         []kv
}

var (
	wordRe   = regexp.MustCompile(`^[A-Za-z0-9._+-]+$`)
	envKeyRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// directiveSafe rejects values that cannot be written on an #SBATCH line.
func directiveSafe(what, v string) error {
	if strings.ContainsAny(v, " \t\r\n\"'\\") {
		return fmt.Errorf("%s %q: whitespace, quotes and backslashes are not allowed in #SBATCH values", what, v)
	}
	return nil
}

// RenderScript renders spec as an sbatch script. envScript, if set, is sourced before
// the command (a site's module setup), checked: when it fails the job ends with
// "mosaic: env script … failed (exit N)" on its stderr and the command does not run
// (dialect.SourceEnvScript). A spec with NoSiteEnvScript sources it itself.
func RenderScript(spec model.JobSpec, files dialect.JobFiles, envScript string) ([]byte, error) {
	// Validate also refuses control characters in every spec field (model.CheckLine,
	// CheckText): the API refuses them first, this is the second line of defence.
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	for what, v := range map[string]string{"env script": envScript, "stdout path": files.Stdout, "stderr path": files.Stderr} {
		if err := model.CheckLine(what, v, model.MaxLineChars); err != nil {
			return nil, fmt.Errorf("job spec %s: %w", spec.Tag, err)
		}
	}
	for what, v := range map[string]string{"tag": spec.Tag, "partition": spec.Partition} {
		if !wordRe.MatchString(v) {
			return nil, fmt.Errorf("job spec %s: %s %q may only contain letters, digits and ._+-", spec.Tag, what, v)
		}
	}
	if spec.Account != "" && !wordRe.MatchString(spec.Account) {
		return nil, fmt.Errorf("job spec %s: account %q may only contain letters, digits and ._+-", spec.Tag, spec.Account)
	}
	for what, v := range map[string]string{"stdout path": files.Stdout, "stderr path": files.Stderr, "workdir": spec.WorkDir} {
		if err := directiveSafe(what, v); err != nil {
			return nil, fmt.Errorf("job spec %s: %w", spec.Tag, err)
		}
	}
	if files.Stdout == "" || files.Stderr == "" {
		return nil, fmt.Errorf("job spec %s: stdout and stderr paths are required", spec.Tag)
	}
	d := scriptData{JobSpec: spec, Time: spec.Walltime.Slurm(), Stdout: files.Stdout, Stderr: files.Stderr}
	if !spec.NoSiteEnvScript {
		d.SourceEnv = dialect.SourceEnvScript(envScript)
	}
	if spec.GPUs > 0 {
		per := spec.GPUsPerNode
		if per <= 0 {
			per = (spec.GPUs + spec.Nodes - 1) / spec.Nodes
		}
		d.Gres = "gpu:" + strconv.Itoa(per)
		if spec.GPUModel != "" {
			t := strings.ToLower(spec.GPUModel)
			if !wordRe.MatchString(t) {
				return nil, fmt.Errorf("job spec %s: GPU model %q may only contain letters, digits and ._+-", spec.Tag, spec.GPUModel)
			}
			d.Gres = "gpu:" + t + ":" + strconv.Itoa(per)
		}
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
	d.Body = spec.Command
	if spec.Script != "" {
		body := spec.Script
		if strings.HasPrefix(body, "#!") {
			if i := strings.IndexByte(body, '\n'); i >= 0 {
				body = body[i+1:]
			} else {
				body = ""
			}
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
		return nil, fmt.Errorf("render sbatch script for %s: %w", spec.Tag, err)
	}
	return b.Bytes(), nil
}

// SubmitCommand submits a script file and prints only the job id.
func SubmitCommand(scriptPath string) []string { return []string{"sbatch", "--parsable", scriptPath} }

// ParseSubmit reads `sbatch --parsable` output: "123" or "123;cluster".
func ParseSubmit(out dialect.Output) (string, error) {
	if out.ExitCode != 0 {
		return "", fmt.Errorf("sbatch refused the job: %s", lastLine(out))
	}
	ls := lines(out.Stdout)
	if len(ls) == 0 {
		return "", fmt.Errorf("sbatch printed no job id (stderr: %q)", strings.TrimSpace(string(out.Stderr)))
	}
	id, _, _ := strings.Cut(strings.TrimSpace(ls[len(ls)-1]), ";")
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return "", fmt.Errorf("sbatch printed %q, not a job id", truncate(ls[len(ls)-1]))
	}
	return id, nil
}

// EstimateCommand asks the controller when the script would start, without submitting it.
func EstimateCommand(scriptPath string) []string {
	return []string{"sbatch", "--test-only", scriptPath}
}

var testOnlyRe = regexp.MustCompile(`Job \d+ to start at (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)`)

// ParseEstimate reads `sbatch --test-only` output (printed on stderr):
// "sbatch: Job 4 to start at 2026-11-30T02:13:55 using 64 processors on nodes n1 in partition gpu".
func ParseEstimate(out dialect.Output, loc *time.Location) (time.Time, error) {
	for _, b := range [][]byte{out.Stderr, out.Stdout} {
		if m := testOnlyRe.FindSubmatch(b); m != nil {
			t := parseTime(string(m[1]), loc)
			if t.IsZero() {
				return time.Time{}, fmt.Errorf("sbatch --test-only: bad time %q", m[1])
			}
			return t, nil
		}
	}
	if out.ExitCode != 0 {
		return time.Time{}, fmt.Errorf("sbatch --test-only refused the job: %s", lastLine(out))
	}
	return time.Time{}, errors.New("sbatch --test-only printed no start estimate")
}

// CancelCommand cancels jobs.
func CancelCommand(jobIDs []string) []string { return append([]string{"scancel"}, jobIDs...) }

// ParseCancel accepts unknown and already finished jobs.
func ParseCancel(out dialect.Output) error {
	if out.ExitCode == 0 {
		return nil
	}
	var bad []string
	for _, l := range lines(out.Stderr) {
		low := strings.ToLower(l)
		if strings.Contains(low, "invalid job id") || strings.Contains(low, "already completing or completed") ||
			strings.Contains(low, "job/step already completing") {
			continue
		}
		bad = append(bad, strings.TrimSpace(l))
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("scancel failed: %s", strings.Join(bad, "; "))
}

func lastLine(out dialect.Output) string {
	for _, b := range [][]byte{out.Stderr, out.Stdout} {
		if ls := lines(b); len(ls) > 0 {
			return strings.TrimSpace(ls[len(ls)-1])
		}
	}
	return fmt.Sprintf("exit status %d", out.ExitCode)
}
