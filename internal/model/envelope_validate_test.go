package model

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func validEnv() Envelope {
	return Envelope{
		GPUs: IntRange{Min: 1, Max: 4}, CPUCores: IntRange{Min: 8, Max: 32},
		Walltime: DurationRange{Min: Duration(time.Hour), Max: Duration(4 * time.Hour)},
	}
}

func TestEnvelopeValidate(t *testing.T) {
	cases := []struct {
		name  string
		mod   func(*Envelope)
		field string // "" = valid
	}{
		{name: "valid", mod: func(*Envelope) {}},
		{name: "max zero means min", mod: func(e *Envelope) { e.GPUs = IntRange{Min: 2} }},
		{name: "gpu alias", mod: func(e *Envelope) { e.Constraints.GPUModels = []string{"NVIDIA A100-SXM4-40GB", "gh200"} }},
		{name: "arch alias", mod: func(e *Envelope) { e.Constraints.Arch = []string{"arm64"} }},
		{name: "min > max gpus", mod: func(e *Envelope) { e.GPUs = IntRange{Min: 4, Max: 2} }, field: "gpus"},
		{name: "min > max cores", mod: func(e *Envelope) { e.CPUCores = IntRange{Min: 64, Max: 8} }, field: "cpu_cores"},
		{name: "min > max memory", mod: func(e *Envelope) { e.MemoryGB = IntRange{Min: 64, Max: 8} }, field: "memory_gb"},
		{name: "min > max nodes", mod: func(e *Envelope) { e.Nodes = IntRange{Min: 4, Max: 2} }, field: "nodes"},
		{name: "negative gpus", mod: func(e *Envelope) { e.GPUs.Min = -1 }, field: "gpus.min"},
		{name: "negative max memory", mod: func(e *Envelope) { e.MemoryGB.Max = -5 }, field: "memory_gb.max"},
		{name: "negative walltime", mod: func(e *Envelope) { e.Walltime.Min = -1 }, field: "walltime.min"},
		{name: "zero walltime", mod: func(e *Envelope) { e.Walltime = DurationRange{} }, field: "walltime.min"},
		{name: "walltime min > max", mod: func(e *Envelope) { e.Walltime.Max = Duration(time.Minute) }, field: "walltime"},
		{name: "walltime too long", mod: func(e *Envelope) { e.Walltime.Max = Duration(400 * 24 * time.Hour) }, field: "walltime.max"},
		{name: "unknown gpu", mod: func(e *Envelope) { e.Constraints.GPUModels = []string{"Z9000"} }, field: "constraints.gpu_models"},
		{name: "unknown avoided gpu", mod: func(e *Envelope) { e.Constraints.AvoidGPUModels = []string{"TPUv5"} }, field: "constraints.avoid_gpu_models"},
		{name: "allowed and avoided", mod: func(e *Envelope) {
			e.Constraints.GPUModels, e.Constraints.AvoidGPUModels = []string{"A100"}, []string{"a100"}
		}, field: "constraints.avoid_gpu_models"},
		{name: "gpu models without gpus", mod: func(e *Envelope) { e.GPUs = IntRange{}; e.Constraints.GPUModels = []string{"A100"} }, field: "constraints.gpu_models"},
		{name: "gpu memory without gpus", mod: func(e *Envelope) { e.GPUs = IntRange{}; e.Constraints.MinGPUMemoryGB = 40 }, field: "constraints.min_gpu_memory_gb"},
		{name: "negative gpu memory", mod: func(e *Envelope) { e.Constraints.MinGPUMemoryGB = -1 }, field: "constraints.min_gpu_memory_gb"},
		{name: "unknown arch", mod: func(e *Envelope) { e.Constraints.Arch = []string{"sparc"} }, field: "constraints.arch"},
		{name: "objective", mod: func(e *Envelope) { e.Objective = "cheapest" }, field: "objective"},
		{name: "container without image", mod: func(e *Envelope) { e.Constraints.Container = &Container{Runtime: "apptainer"} }, field: "constraints.container.image"},
		{name: "container runtime", mod: func(e *Envelope) { e.Constraints.Container = &Container{Image: "x.sif", Runtime: "lxc"} }, field: "constraints.container.runtime"},
		{name: "queue wait", mod: func(e *Envelope) { e.MaxQueueWait = -1 }, field: "max_queue_wait"},
		{name: "source", mod: func(e *Envelope) { e.Source = "oracle" }, field: "source"},
		{name: "confidence", mod: func(e *Envelope) { e.Confidence = 1.5 }, field: "confidence"},
		{name: "too many gpus", mod: func(e *Envelope) { e.GPUs.Max = MaxEnvelopeGPUs + 1 }, field: "gpus.max"},
		{name: "gpus cannot cover nodes", mod: func(e *Envelope) { e.Nodes = IntRange{Min: 8, Max: 8} }, field: "gpus.max"},
		{name: "empty feature", mod: func(e *Envelope) { e.Constraints.Features = []string{" "} }, field: "constraints.features"},
		{name: "empty avoided system", mod: func(e *Envelope) { e.Constraints.AvoidSystems = []string{""} }, field: "constraints.avoid_systems"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := validEnv()
			tc.mod(&e)
			before, _ := json.Marshal(e)
			err := e.Validate()
			after, _ := json.Marshal(e)
			if string(before) != string(after) {
				t.Errorf("Validate modified the envelope")
			}
			if tc.field == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			var fe *EnvelopeFieldError
			if !errors.As(err, &fe) {
				t.Fatalf("want an EnvelopeFieldError naming %s, got %v", tc.field, err)
			}
			if !strings.Contains(err.Error(), "envelope field "+tc.field+":") {
				t.Errorf("error %q does not name field %s", err, tc.field)
			}
		})
	}
}

func TestEnvelopeNormalizeDefaults(t *testing.T) {
	e := Envelope{GPUs: IntRange{Min: 2}, Walltime: DurationRange{Min: Duration(time.Hour)},
		Constraints: Constraints{GPUModels: []string{"a100", "NVIDIA A100", "h100 pcie"}, Arch: []string{"amd64"},
			Container: &Container{Image: " x.sif ", Runtime: " Apptainer "}}}
	e.Normalize()
	if e.Nodes != (IntRange{1, 1}) || e.CPUCores != (IntRange{1, 1}) || e.GPUs != (IntRange{2, 2}) {
		t.Errorf("ranges: nodes %v cores %v gpus %v", e.Nodes, e.CPUCores, e.GPUs)
	}
	if e.Walltime.Max != Duration(time.Hour) || e.Objective != ObjEarliestStart || e.Source != SourceUser || e.Confidence != 1 {
		t.Errorf("defaults: %+v", e)
	}
	if strings.Join(e.Constraints.GPUModels, ",") != "A100,H100" || e.Constraints.Arch[0] != "x86_64" {
		t.Errorf("canonical names: %v %v", e.Constraints.GPUModels, e.Constraints.Arch)
	}
	if e.Constraints.Container.Image != "x.sif" || e.Constraints.Container.Runtime != "apptainer" {
		t.Errorf("container: %+v", e.Constraints.Container)
	}
}

func TestCanonicalGPU(t *testing.T) {
	for in, want := range map[string]string{
		"A100": "A100", "nvidia a100-sxm4-40gb": "A100-40GB", "NVIDIA A100 80GB PCIe": "A100-80GB", "Quadro RTX 5000": "RTX5000",
		"GH200": "GH200", "h100_pcie": "H100", "AMD Instinct MI100": "MI100", "l40s": "L40S", "Tesla V100-SXM2-32GB": "V100-32GB",
	} {
		got, ok := CanonicalGPU(in)
		if !ok || got != want {
			t.Errorf("CanonicalGPU(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if _, ok := CanonicalGPU("Z9000"); ok {
		t.Error("Z9000 accepted")
	}
}

func TestDecodeEnvelopeJSONAndYAML(t *testing.T) {
	js := `{"gpus":{"min":1,"max":4},"walltime":{"min":"2h","max":"08:00:00"},"constraints":{"gpu_models":["a100"]},"objective":"min_cost"}`
	e, err := DecodeEnvelopeJSON([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	if e.Walltime.Max != Duration(8*time.Hour) || e.Constraints.GPUModels[0] != "A100" || e.Objective != ObjMinCost || e.Nodes.Min != 1 {
		t.Errorf("decoded %+v", e)
	}
	y := "gpus: {min: 1, max: 4}\nwalltime:\n  min: 2h\n  max: \"08:00:00\"\nconstraints:\n  gpu_models: [a100]\nobjective: min_cost\n"
	ey, err := DecodeEnvelopeYAML([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(e)
	b, _ := json.Marshal(ey)
	if string(a) != string(b) {
		t.Errorf("JSON and YAML forms differ:\n%s\n%s", a, b)
	}
	// Round trip.
	again, err := DecodeEnvelopeJSON(a)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := json.Marshal(again)
	if string(c) != string(a) {
		t.Errorf("round trip differs:\n%s\n%s", a, c)
	}
}

func TestDecodeEnvelopeMalformed(t *testing.T) {
	for name, in := range map[string]string{
		"empty":          ``,
		"not json":       `gpus: 1`,
		"unknown field":  `{"gpus":{"min":1},"walltime":{"min":"1h"},"gpu":3}`,
		"trailing":       `{"walltime":{"min":"1h"}} {}`,
		"bad duration":   `{"walltime":{"min":"soon"}}`,
		"wrong type":     `{"gpus":"four","walltime":{"min":"1h"}}`,
		"invalid values": `{"gpus":{"min":4,"max":2},"walltime":{"min":"1h"}}`,
		"no walltime":    `{"gpus":{"min":1}}`,
	} {
		if _, err := DecodeEnvelopeJSON([]byte(in)); err == nil {
			t.Errorf("%s: accepted %q", name, in)
		}
	}
	for name, in := range map[string]string{
		"empty":         ``,
		"unknown field": "walltime: {min: 1h}\ngpu: 3\n",
		"bad duration":  "walltime: {min: soon}\n",
		"invalid":       "walltime: {min: 2h, max: 1h}\n",
		"not a map":     "- 1\n- 2\n",
	} {
		if _, err := DecodeEnvelopeYAML([]byte(in)); err == nil {
			t.Errorf("yaml %s: accepted %q", name, in)
		}
	}
}

// FuzzEnvelopeJSON: decoding never panics, and whatever is accepted is valid, stable
// under a second Normalize and survives a JSON round trip.
func FuzzEnvelopeJSON(f *testing.F) {
	f.Add(`{"gpus":{"min":1,"max":4},"walltime":{"min":"2h","max":"8h"},"constraints":{"gpu_models":["a100"]}}`)
	f.Add(`{"cpu_cores":{"min":64},"nodes":{"min":2,"max":4},"walltime":{"min":"1-00:00:00"},"objective":"max_throughput"}`)
	f.Add(`{"walltime":{"min":3600},"constraints":{"container":{"image":"x.sif","runtime":"singularity"},"arch":["arm64"]}}`)
	f.Add(`{"gpus":{"min":-1},"walltime":{"min":"0"}}`)
	f.Fuzz(func(t *testing.T, in string) {
		e, err := DecodeEnvelopeJSON([]byte(in))
		if err != nil {
			return
		}
		if err := e.Validate(); err != nil {
			t.Fatalf("accepted but invalid: %v", err)
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		n := e
		n.Normalize()
		nb, _ := json.Marshal(n)
		if string(nb) != string(b) {
			t.Fatalf("Normalize is not idempotent:\n%s\n%s", b, nb)
		}
		again, err := DecodeEnvelopeJSON(b)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", b, err)
		}
		if ab, _ := json.Marshal(again); string(ab) != string(b) {
			t.Fatalf("round trip differs:\n%s\n%s", b, ab)
		}
	})
}
