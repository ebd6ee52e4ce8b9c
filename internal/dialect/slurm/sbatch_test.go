package slurm

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

func baseSpec() model.JobSpec {
	return model.JobSpec{Tag: "mosaic-t1-1", Name: "train 'big' model", Partition: "gpuA100", Account: "rigacct",
		Nodes: 1, NTasks: 1, CPUsPerTask: 8, GPUs: 2, GPUModel: "A100", MemoryGB: 32, Walltime: model.Duration(90 * time.Minute),
		Command: `echo "$CUDA_VISIBLE_DEVICES" && python train.py --lr 1e-3`, Env: map[string]string{"B": "it's $HOME", "A": "1"},
		WorkDir: "/scratch/u/mosaic"}
}

var files = dialect.JobFiles{Script: "/w/mosaic/mosaic-t1-1.sbatch", Stdout: "/w/mosaic/mosaic-t1-1.out", Stderr: "/w/mosaic/mosaic-t1-1.err"}

func TestRenderScript(t *testing.T) {
	b, err := RenderScript(baseSpec(), files, "/etc/site-env.sh")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.HasPrefix(s, "#!/bin/bash\n") { // sbatch runs the script with its #! interpreter: bash, for the env-script check and the command
		t.Errorf("script does not start with #!/bin/bash:\n%s", s)
	}
	for _, want := range []string{"#SBATCH --job-name=mosaic-t1-1\n", "#SBATCH --partition=gpuA100\n",
		"#SBATCH --account=rigacct\n", "#SBATCH --nodes=1\n", "#SBATCH --ntasks=1\n", "#SBATCH --cpus-per-task=8\n",
		"#SBATCH --mem=32G\n", "#SBATCH --gres=gpu:a100:2\n", "#SBATCH --time=01:30:00\n",
		"#SBATCH --output=/w/mosaic/mosaic-t1-1.out\n", "#SBATCH --error=/w/mosaic/mosaic-t1-1.err\n",
		"#SBATCH --chdir=/scratch/u/mosaic\n", "export A=1\nexport B='it'\\''s $HOME'\n", "cd /scratch/u/mosaic || exit 1\n",
		"\n. /etc/site-env.sh\n", "\necho \"$CUDA_VISIBLE_DEVICES\" && python train.py --lr 1e-3\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	if err := exec.Command("bash", "-n", "-c", s).Run(); err != nil {
		t.Errorf("bash -n rejects the script: %v\n%s", err, s)
	}
}

// TestRenderScriptNice: a spec's nice is a directive, none without; outside 0..MaxNice
// the spec is refused.
func TestRenderScriptNice(t *testing.T) {
	sp := baseSpec()
	b, err := RenderScript(sp, files, "")
	if err != nil || strings.Contains(string(b), "--nice") {
		t.Fatalf("no nice: %v\n%s", err, b)
	}
	sp.Nice = 96
	if b, err = RenderScript(sp, files, ""); err != nil || !strings.Contains(string(b), "#SBATCH --time=01:30:00\n#SBATCH --nice=96\n") {
		t.Fatalf("nice 96: %v\n%s", err, b)
	}
	for _, n := range []int{-1, model.MaxNice + 1} {
		sp.Nice = n
		if _, err := RenderScript(sp, files, ""); err == nil || !strings.Contains(err.Error(), "nice") {
			t.Errorf("nice %d: %v, want a refusal naming nice", n, err)
		}
	}
}

func TestRenderScriptVariants(t *testing.T) {
	sp := baseSpec()
	sp.GPUs, sp.GPUModel, sp.Account, sp.MemoryGB, sp.NTasks, sp.WorkDir, sp.Env = 0, "", "", 0, 0, "", nil
	sp.Script = "#!/bin/sh\necho one\necho two\n"
	b, err := RenderScript(sp, files, "")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, bad := range []string{"--gres", "--account", "--mem", "--ntasks", "--chdir", "#!/bin/sh", "source"} {
		if strings.Contains(s, bad) {
			t.Errorf("script should not contain %q:\n%s", bad, s)
		}
	}
	if !strings.HasSuffix(s, "echo one\necho two\n") {
		t.Errorf("body:\n%s", s)
	}

	sp = baseSpec()
	sp.Nodes, sp.GPUs, sp.GPUsPerNode, sp.GPUModel = 2, 8, 0, ""
	sp.Container = &model.Container{Image: "/img/pytorch.sif"}
	b, err = RenderScript(sp, files, "")
	if err != nil {
		t.Fatal(err)
	}
	s = string(b)
	if !strings.Contains(s, "#SBATCH --gres=gpu:4\n") || !strings.Contains(s, `exec "$(command -v apptainer || command -v singularity || echo apptainer)" exec --nv /img/pytorch.sif /bin/bash -c`+" 'echo \"$CUDA_VISIBLE_DEVICES\"") {
		t.Errorf("container/multi-node:\n%s", s)
	}
	if err := exec.Command("bash", "-n", "-c", s).Run(); err != nil {
		t.Errorf("bash -n: %v", err)
	}
}

func TestRenderScriptRejects(t *testing.T) {
	mut := map[string]func(*model.JobSpec){
		"partition newline": func(s *model.JobSpec) { s.Partition = "gpu\n#SBATCH --qos=high" },
		"account space":     func(s *model.JobSpec) { s.Account = "a b" },
		"workdir space":     func(s *model.JobSpec) { s.WorkDir = "/a b" },
		"env name":          func(s *model.JobSpec) { s.Env = map[string]string{"BAD-NAME": "x"} },
		"gpu model":         func(s *model.JobSpec) { s.GPUModel = "a100;rm" },
		"runtime":           func(s *model.JobSpec) { s.Container = &model.Container{Image: "x", Runtime: "docker"} },
		"image":             func(s *model.JobSpec) { s.Container = &model.Container{} },
		"invalid spec":      func(s *model.JobSpec) { s.Walltime = 0 },
		"tag":               func(s *model.JobSpec) { s.Tag = "mosaic x" },
	}
	for name, m := range mut {
		sp := baseSpec()
		m(&sp)
		if _, err := RenderScript(sp, files, ""); err == nil {
			t.Errorf("%s: want error", name)
		}
	}
	if _, err := RenderScript(baseSpec(), dialect.JobFiles{}, ""); err == nil {
		t.Error("missing output paths: want error")
	}
}

// TestParseLimitOverflow: a site time limit too large for a time.Duration is refused,
// never wrapped into a short limit; long but representable limits are kept.
func TestParseLimitOverflow(t *testing.T) {
	for _, in := range []string{"213504-00:00:00", "99999999999999999999", "106752-00:00:00"} {
		if d, ok := parseLimit(in); ok {
			t.Errorf("parseLimit(%q) = %v, want refused", in, d)
		}
	}
	if d, ok := parseLimit("1000-00:00:00"); !ok || d.D() != 1000*24*time.Hour {
		t.Errorf("parseLimit(1000-00:00:00) = %v %v", d, ok)
	}
}
