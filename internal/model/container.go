package model

import (
	"fmt"
	"slices"
	"strings"
)

// Container runtimes, in one place: the names a site may report and an envelope may
// name, which of them Mosaic's job scripts can drive, and which are interchangeable.

// KnownContainerRuntimes are the runtime names sites report and envelopes may name.
var KnownContainerRuntimes = []string{"apptainer", "singularity", "docker", "podman", "podman-hpc", "charliecloud", "enroot", "shifter", "sarus"}

// RunnableContainerRuntimes are the runtimes the Slurm and PBS job scripts drive
// (`apptainer exec` / `singularity exec`). Images of other registries run under them
// as docker:// or oras:// URIs.
var RunnableContainerRuntimes = []string{"apptainer", "singularity"}

// DefaultContainerRuntime runs a container whose runtime the task left open.
const DefaultContainerRuntime = "apptainer"

// IsKnownContainerRuntime reports whether rt (any case) is one of KnownContainerRuntimes.
func IsKnownContainerRuntime(rt string) bool {
	return slices.Contains(KnownContainerRuntimes, strings.ToLower(strings.TrimSpace(rt)))
}

// IsRunnableContainerRuntime reports whether Mosaic's job scripts can drive rt.
func IsRunnableContainerRuntime(rt string) bool {
	return slices.Contains(RunnableContainerRuntimes, strings.ToLower(strings.TrimSpace(rt)))
}

// ContainerRuntimeCompatible reports whether a site offering have runs a container
// that asked for want: the same runtime, or both of the apptainer family (apptainer
// is singularity's successor and reads the same images and flags).
func ContainerRuntimeCompatible(want, have string) bool {
	if strings.EqualFold(strings.TrimSpace(want), strings.TrimSpace(have)) {
		return true
	}
	return IsRunnableContainerRuntime(want) && IsRunnableContainerRuntime(have)
}

// ScriptRuntime is the runtime a job script uses for c: its own (lower-cased) or the
// default, and an error naming the runnable ones when the scripts cannot drive it.
func ScriptRuntime(c *Container) (string, error) {
	rt := strings.ToLower(strings.TrimSpace(c.Runtime))
	if rt == "" {
		rt = DefaultContainerRuntime
	}
	if !IsRunnableContainerRuntime(rt) {
		return "", fmt.Errorf("container runtime %q: Mosaic's job scripts run %s (give other registries' images as docker:// URIs)",
			c.Runtime, strings.Join(RunnableContainerRuntimes, " or "))
	}
	return rt, nil
}

// RuntimeCommand is the shell word a job script runs rt (a ScriptRuntime result) with:
// rt itself when the node has it, else the other of the apptainer family (the rule
// that placed the job treats them as one, and many sites install only SingularityCE).
// Anything but "singularity" gets the apptainer form (ScriptRuntime has checked it).
func RuntimeCommand(rt string) string {
	if rt == "singularity" {
		return `"$(command -v singularity || command -v apptainer || echo singularity)"`
	}
	return `"$(command -v apptainer || command -v singularity || echo apptainer)"` // fixed words: nothing of rt reaches the shell
}

// ParseContainerRef reads RUNTIME:IMAGE ("apptainer:/scratch/x.sif",
// "singularity:docker://pytorch/pytorch") as the CLI's --container takes it.
func ParseContainerRef(s string) (*Container, error) {
	rt, img, ok := strings.Cut(s, ":")
	if !ok || img == "" || !IsRunnableContainerRuntime(rt) {
		return nil, fmt.Errorf("%q: want RUNTIME:IMAGE with RUNTIME %s", s, strings.Join(RunnableContainerRuntimes, " or "))
	}
	return &Container{Runtime: strings.ToLower(rt), Image: img}, nil
}

// RunnableRuntimeNamedIn returns the first runtime the job scripts can drive that text
// (prose) names as a word ("singularity", also as "singularity-ce"), or "" when it names
// none: "a docker image run with singularity" is singularity, "a docker image" is ""
// (the image's origin, which the default runtime runs).
func RunnableRuntimeNamedIn(text string) string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-')
	})
	for _, w := range words {
		for _, rt := range RunnableContainerRuntimes {
			if w == rt || strings.HasPrefix(w, rt+"-") {
				return rt
			}
		}
	}
	return ""
}
