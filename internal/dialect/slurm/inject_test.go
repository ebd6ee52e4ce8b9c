package slurm

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// TestRenderScriptRefusesControlCharacters is finding 7 at the renderer: a spec whose
// fields carry a newline, NUL or other control character is refused, so a value that
// bypassed the API check cannot add an #SBATCH directive or a shell line.
func TestRenderScriptRefusesControlCharacters(t *testing.T) {
	cases := []struct {
		name      string
		mod       func(*model.JobSpec, *dialect.JobFiles, *string)
		wantField string
	}{
		{"name newline directive", func(s *model.JobSpec, _ *dialect.JobFiles, _ *string) {
			s.Name = "x\n#SBATCH --account=someone-else"
		}, "name"},
		{"name newline shell line", func(s *model.JobSpec, _ *dialect.JobFiles, _ *string) { s.Name = "x'\ntouch /tmp/pwned #" }, "name"},
		{"name carriage return", func(s *model.JobSpec, _ *dialect.JobFiles, _ *string) { s.Name = "x\rtouch /tmp/pwned" }, "name"},
		{"name NUL", func(s *model.JobSpec, _ *dialect.JobFiles, _ *string) { s.Name = "x\x00y" }, "name"},
		{"name escape", func(s *model.JobSpec, _ *dialect.JobFiles, _ *string) { s.Name = "x\x1b[2J" }, "name"},
		{"name C1", func(s *model.JobSpec, _ *dialect.JobFiles, _ *string) { s.Name = "x\u0085y" }, "name"},
		{"name bidi override", func(s *model.JobSpec, _ *dialect.JobFiles, _ *string) { s.Name = "x\u202ey" }, "name"},
		{"name invalid utf8", func(s *model.JobSpec, _ *dialect.JobFiles, _ *string) { s.Name = "x\xffy" }, "name"},
		{"command NUL", func(s *model.JobSpec, _ *dialect.JobFiles, _ *string) { s.Command = "echo a\x00; rm -rf ~" }, "command"},
		{"command DEL", func(s *model.JobSpec, _ *dialect.JobFiles, _ *string) { s.Command = "echo \x7f" }, "command"},
		{"command CR", func(s *model.JobSpec, _ *dialect.JobFiles, _ *string) { s.Command = "echo a\r\n" }, "command"},
		{"script escape", func(s *model.JobSpec, _ *dialect.JobFiles, _ *string) {
			s.Command, s.Script = "", "#!/bin/bash\necho \x1b]0;x\x07\n"
		}, "script"},
		{"env value NUL", func(s *model.JobSpec, _ *dialect.JobFiles, _ *string) { s.Env = map[string]string{"A": "1\x00"} }, "environment variable A"},
		{"env key newline", func(s *model.JobSpec, _ *dialect.JobFiles, _ *string) { s.Env = map[string]string{"A\nB": "1"} }, "environment variable name"},
		{"workdir newline", func(s *model.JobSpec, _ *dialect.JobFiles, _ *string) { s.WorkDir = "/w\n#SBATCH --x" }, "workdir"},
		{"workdir vertical tab", func(s *model.JobSpec, _ *dialect.JobFiles, _ *string) { s.WorkDir = "/w\vx" }, "workdir"},
		{"container image newline", func(s *model.JobSpec, _ *dialect.JobFiles, _ *string) {
			s.Container = &model.Container{Image: "x.sif\nid"}
		}, "container.image"},
		{"gpu model newline", func(s *model.JobSpec, _ *dialect.JobFiles, _ *string) { s.GPUModel = "A100\n#SBATCH --x" }, "gpu_model"},
		{"account NUL", func(s *model.JobSpec, _ *dialect.JobFiles, _ *string) { s.Account = "a\x00" }, "account"},
		{"partition tab", func(s *model.JobSpec, _ *dialect.JobFiles, _ *string) { s.Partition = "a\tb" }, "partition"},
		{"tag newline", func(s *model.JobSpec, _ *dialect.JobFiles, _ *string) { s.Tag = "mosaic-x-1\n#SBATCH --x" }, "tag"},
		{"stdout newline", func(_ *model.JobSpec, f *dialect.JobFiles, _ *string) { f.Stdout = "/w/o\n#SBATCH --x" }, "stdout path"},
		{"stderr NUL", func(_ *model.JobSpec, f *dialect.JobFiles, _ *string) { f.Stderr = "/w/e\x00" }, "stderr path"},
		{"env script newline", func(_ *model.JobSpec, _ *dialect.JobFiles, e *string) { *e = "/etc/env.sh\nid" }, "env script"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sp, f, envScript := baseSpec(), files, "/etc/site-env.sh"
			tc.mod(&sp, &f, &envScript)
			b, err := RenderScript(sp, f, envScript)
			if err == nil {
				t.Fatalf("rendered a script from a hostile %s:\n%s", tc.wantField, b)
			}
			if b != nil {
				t.Errorf("returned a script with the error")
			}
			if !strings.Contains(err.Error(), tc.wantField) {
				t.Errorf("error %q does not name %s", err, tc.wantField)
			}
		})
	}
}

// TestRenderScriptKeepsMultilineCommands: newlines and tabs in a command or script
// body are legitimate and still render into a script bash accepts.
func TestRenderScriptKeepsMultilineCommands(t *testing.T) {
	sp := baseSpec()
	sp.Command = "for i in 1 2; do\n\techo $i\ndone"
	sp.Name = "train € model"
	sp.Env = map[string]string{"A": "line1\nline2\tx"}
	b, err := RenderScript(sp, files, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "for i in 1 2; do\n\techo $i\ndone\n") {
		t.Errorf("command body not kept:\n%s", b)
	}
	if err := exec.Command("bash", "-n", "-c", string(b)).Run(); err != nil {
		t.Errorf("bash -n rejects the script: %v\n%s", err, b)
	}
}
