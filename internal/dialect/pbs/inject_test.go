package pbs

import (
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// TestRenderScriptRefusesControlCharacters is finding 7 at the PBS renderer: a spec
// whose fields carry a newline, NUL or other control character is refused, so a value
// that bypassed the API check cannot add a #PBS directive or a shell line.
func TestRenderScriptRefusesControlCharacters(t *testing.T) {
	base := func() (model.JobSpec, dialect.JobFiles) {
		return model.JobSpec{Tag: "mosaic-t-1", Name: "t", Partition: "debug", Account: "proj", Nodes: 1, NTasks: 1, CPUsPerTask: 4,
				Walltime: model.Duration(time.Hour), Command: "echo hi", Env: map[string]string{"X": "a b"}, WorkDir: "/w"},
			dialect.JobFiles{Script: "/w/mosaic/mosaic-t-1.pbs", Stdout: "/w/mosaic/mosaic-t-1.out", Stderr: "/w/mosaic/mosaic-t-1.err"}
	}
	cases := []struct {
		name, field string
		mod         func(*model.JobSpec, *dialect.JobFiles, *string, *string)
	}{
		{"name newline directive", "name", func(s *model.JobSpec, _ *dialect.JobFiles, _, _ *string) { s.Name = "x\n#PBS -A someone-else" }},
		{"name newline shell line", "name", func(s *model.JobSpec, _ *dialect.JobFiles, _, _ *string) { s.Name = "x'\ntouch /tmp/pwned #" }},
		{"name NUL", "name", func(s *model.JobSpec, _ *dialect.JobFiles, _, _ *string) { s.Name = "x\x00" }},
		{"name escape", "name", func(s *model.JobSpec, _ *dialect.JobFiles, _, _ *string) { s.Name = "\x1b[31mred" }},
		{"command NUL", "command", func(s *model.JobSpec, _ *dialect.JobFiles, _, _ *string) { s.Command = "echo\x00" }},
		{"script backspace", "script", func(s *model.JobSpec, _ *dialect.JobFiles, _, _ *string) { s.Command, s.Script = "", "echo a\b" }},
		{"env value NUL", "environment variable X", func(s *model.JobSpec, _ *dialect.JobFiles, _, _ *string) { s.Env["X"] = "\x00" }},
		{"workdir newline", "workdir", func(s *model.JobSpec, _ *dialect.JobFiles, _, _ *string) { s.WorkDir = "/w\nid" }},
		{"image newline", "container.image", func(s *model.JobSpec, _ *dialect.JobFiles, _, _ *string) {
			s.Container = &model.Container{Image: "a.sif\nid"}
		}},
		{"account newline", "account", func(s *model.JobSpec, _ *dialect.JobFiles, _, _ *string) { s.Account = "p\n#PBS -q x" }},
		{"stdout newline", "stdout path", func(_ *model.JobSpec, f *dialect.JobFiles, _, _ *string) { f.Stdout = "/w/o\n#PBS -q x" }},
		{"env script newline", "env script", func(_ *model.JobSpec, _ *dialect.JobFiles, e, _ *string) { *e = "/e.sh\nid" }},
		{"filesystems newline", "filesystems", func(_ *model.JobSpec, _ *dialect.JobFiles, _, fs *string) { *fs = "home\n#PBS -q x" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sp, f := base()
			envScript, fs := "", "home:eagle"
			tc.mod(&sp, &f, &envScript, &fs)
			b, err := RenderScript(sp, f, envScript, fs)
			if err == nil {
				t.Fatalf("rendered a script from a hostile %s:\n%s", tc.field, b)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error %q does not name %s", err, tc.field)
			}
		})
	}
	// The unmodified spec renders (the table above fails for the reason it names).
	sp, f := base()
	if _, err := RenderScript(sp, f, "", "home:eagle"); err != nil {
		t.Fatal(err)
	}
}
