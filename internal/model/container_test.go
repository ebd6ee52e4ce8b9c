package model

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/transport/rigenv"
)

func TestContainerRuntimes(t *testing.T) {
	for _, rt := range RunnableContainerRuntimes {
		if !IsKnownContainerRuntime(rt) {
			t.Errorf("runnable runtime %q is not in KnownContainerRuntimes", rt)
		}
	}
	if !IsRunnableContainerRuntime(DefaultContainerRuntime) {
		t.Errorf("default runtime %q is not runnable", DefaultContainerRuntime)
	}
	compat := []struct {
		want, have string
		ok         bool
	}{
		{"apptainer", "apptainer", true}, {"Singularity", "apptainer", true}, {"apptainer", "SINGULARITY", true},
		{"podman", "podman", true}, {"podman", "apptainer", false}, {"apptainer", "docker", false}, {"docker", "podman", false},
	}
	for _, c := range compat {
		if got := ContainerRuntimeCompatible(c.want, c.have); got != c.ok {
			t.Errorf("ContainerRuntimeCompatible(%q, %q) = %v, want %v", c.want, c.have, got, c.ok)
		}
	}
}

func TestScriptRuntime(t *testing.T) {
	for _, c := range []struct{ in, out, err string }{
		{"", "apptainer", ""}, {"Singularity", "singularity", ""}, {" apptainer ", "apptainer", ""},
		{"docker", "", `container runtime "docker": Mosaic's job scripts run apptainer or singularity`},
		{"nonsense", "", `container runtime "nonsense"`},
	} {
		got, err := ScriptRuntime(&Container{Image: "x.sif", Runtime: c.in})
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ScriptRuntime(%q) error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.out {
			t.Errorf("ScriptRuntime(%q) = %q, %v; want %q", c.in, got, err, c.out)
		}
	}
}

func TestParseContainerRef(t *testing.T) {
	for _, c := range []struct {
		in      string
		rt, img string
		bad     bool
	}{
		{in: "apptainer:/scratch/x.sif", rt: "apptainer", img: "/scratch/x.sif"},
		{in: "Singularity:docker://pytorch/pytorch:2.3", rt: "singularity", img: "docker://pytorch/pytorch:2.3"},
		{in: "docker:pytorch", bad: true}, {in: "apptainer:", bad: true}, {in: "x.sif", bad: true}, {in: "", bad: true},
	} {
		ct, err := ParseContainerRef(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("ParseContainerRef(%q) = %+v, want an error", c.in, ct)
			}
			continue
		}
		if err != nil || ct.Runtime != c.rt || ct.Image != c.img {
			t.Errorf("ParseContainerRef(%q) = %+v, %v", c.in, ct, err)
		}
	}
}

func TestRunnableRuntimeNamedIn(t *testing.T) {
	for in, want := range map[string]string{
		"run it under singularity please":            "singularity",
		"an apptainer image":                         "apptainer",
		"a docker image, run with singularity":       "singularity",
		"with SingularityCE? no: singularity-ce 4":   "singularity",
		"a podman-hpc container":                     "",
		"a docker image":                             "",
		"dockerfile based build":                     "",
		"no runtime named":                           "",
		"apptainers are not a runtime (plural)":      "",
		"docker://nvcr.io/nvidia/pytorch, apptainer": "apptainer",
	} {
		if got := RunnableRuntimeNamedIn(in); got != want {
			t.Errorf("RunnableRuntimeNamedIn(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestEnvelopeRefusesUnrunnableRuntime: an envelope may only ask for a runtime the job
// scripts drive; docker used to pass validation and placement and fail at dispatch.
func TestEnvelopeRefusesUnrunnableRuntime(t *testing.T) {
	for rt, want := range map[string]string{"docker": "Mosaic's job scripts run apptainer or singularity", "rkt": "unknown runtime"} {
		e := validEnv()
		e.Constraints.Container = &Container{Image: "x.sif", Runtime: rt}
		e.Normalize()
		err := e.Validate()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("runtime %s: Validate() = %v, want %q", rt, err, want)
		}
	}
}

// TestRuntimeCommandFallsBackInFamily runs the rendered word in bash with only the
// other runtime on PATH: a job asking for apptainer runs on a SingularityCE-only node
// (the container rule placed it there as compatible), and the asked one wins when both
// are there.
func TestRuntimeCommandFallsBackInFamily(t *testing.T) {
	bash := rigenv.NeedTool(t, "bash", "apt-get install -y bash")
	for _, c := range []struct {
		ask  string
		have []string
		want string
	}{
		{"apptainer", []string{"singularity"}, "singularity"},
		{"singularity", []string{"apptainer"}, "apptainer"},
		{"apptainer", []string{"apptainer", "singularity"}, "apptainer"},
		{"singularity", []string{"apptainer", "singularity"}, "singularity"},
	} {
		dir := t.TempDir()
		for _, h := range c.have {
			if err := os.WriteFile(filepath.Join(dir, h), []byte("#!/bin/sh\necho "+h+" \"$@\"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(bash, "-c", "exec "+RuntimeCommand(c.ask)+" exec img true")
		cmd.Env = []string{"PATH=" + dir}
		out, err := cmd.Output()
		if err != nil || strings.TrimSpace(string(out)) != c.want+" exec img true" {
			t.Errorf("ask %s with %v on PATH: %q %v, want %s to run", c.ask, c.have, out, err, c.want)
		}
	}
}
