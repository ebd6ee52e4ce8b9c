package site

import (
	"slices"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

func TestKnownMachinesSanity(t *testing.T) {
	ms := KnownMachines()
	wantNames := map[string]string{
		"delta": "Delta@NCSA", "deltaai": "DeltaAI@NCSA", "anvil": "Anvil@RCAC",
		"vista": "Vista@TACC", "frontera": "Frontera@TACC", "lonestar6": "Lonestar6@TACC",
	}
	if len(ms) != len(wantNames) {
		t.Fatalf("%d known machines, want %d", len(ms), len(wantNames))
	}
	for _, m := range ms {
		if wantNames[m.Machine] != m.Name {
			t.Errorf("machine %q named %q", m.Machine, m.Name)
		}
		if m.Host == "" || m.Dialect != DialectSlurm || m.Kind != "" {
			t.Errorf("%s: host %q dialect %q kind %q", m.Name, m.Host, m.Dialect, m.Kind)
		}
		if _, ok := CanonicalArch(m.Arch); !ok || m.Arch != mustArch(m.Arch) {
			t.Errorf("%s: arch %q not canonical", m.Name, m.Arch)
		}
		if !slices.Contains(m.ContainerRuntimes, "apptainer") {
			t.Errorf("%s: container runtimes %v", m.Name, m.ContainerRuntimes)
		}
		if len(m.Partitions) == 0 {
			t.Errorf("%s: no partitions", m.Name)
		}
		gpu := 0
		for _, p := range m.Partitions {
			if p.Nodes < 1 || p.CPUCores < 1 || p.MemoryGB < 1 || p.MaxWalltime <= 0 || p.ChargeFactor <= 0 {
				t.Errorf("%s/%s: incomplete shape %+v", m.Name, p.Name, p)
			}
			if p.GPUs > 0 {
				gpu++
				if c, ok := CanonicalGPUModel(p.GPUModel); !ok || c != p.GPUModel || p.GPUMemoryGB <= 0 {
					t.Errorf("%s/%s: GPU model %q memory %d", m.Name, p.Name, p.GPUModel, p.GPUMemoryGB)
				}
			}
		}
		if gpu == 0 {
			t.Errorf("%s: no GPU partition (every known machine has one)", m.Name)
		}
		// A known shape plus a kind and an account is a valid catalog.
		m.Kind, m.Accounts = KindSim, []string{"x"}
		if _, err := Validate(&Catalog{Systems: []System{m}}); err != nil {
			t.Errorf("%s: known shape does not validate: %v", m.Name, err)
		}
	}
}

func mustArch(s string) string { a, _ := CanonicalArch(s); return a }

func TestKnownMachineFacts(t *testing.T) {
	// Spot checks against machines.md; a changed value here should be a conscious edit.
	cases := []struct {
		machine, partition        string
		nodes, cores, memGB, gpus int
		model                     string
		gpuMem                    int
		exclusive                 bool
		charge                    float64
	}{
		{"delta", "gpuA100x4", 100, 64, 256, 4, "A100", 40, false, 1.0},
		{"delta", "gpuMI100x8", 1, 128, 2048, 8, "MI100", 32, false, 0.25},
		{"delta", "gpuA40x4", 100, 64, 256, 4, "A40", 48, false, 0.5},
		{"deltaai", "ghx4", 114, 288, 480, 4, "H100", 96, false, 1.0},
		{"anvil", "ai", 21, 96, 1024, 4, "H100", 80, false, 1},
		{"anvil", "wholenode", 1000, 128, 256, 0, "", 0, true, 1},
		{"vista", "gg", 256, 144, 237, 0, "", 0, true, 0.33},
		{"frontera", "rtx", 90, 16, 128, 4, "RTX5000", 16, true, 3},
		{"ls6", "gpu-h100", 4, 96, 384, 2, "H100", 80, true, 6},
		{"lonestar6", "gpu-a100", 84, 128, 256, 3, "A100", 40, true, 4},
	}
	for _, c := range cases {
		m, ok := Known(c.machine)
		if !ok {
			t.Fatalf("Known(%q) missing", c.machine)
		}
		p, ok := m.PartitionByName(c.partition)
		if !ok {
			t.Errorf("%s lacks %s", c.machine, c.partition)
			continue
		}
		if p.Nodes != c.nodes || p.CPUCores != c.cores || p.MemoryGB != c.memGB || p.GPUs != c.gpus ||
			p.GPUModel != c.model || p.GPUMemoryGB != c.gpuMem || p.Exclusive != c.exclusive || p.ChargeFactor != c.charge {
			t.Errorf("%s/%s = %+v", c.machine, c.partition, p)
		}
	}
	for _, omitted := range [][2]string{{"delta", "gpuH200x8"}, {"lonestar6", "gpu-a100-small"}} {
		m, _ := Known(omitted[0])
		if _, ok := m.PartitionByName(omitted[1]); ok {
			t.Errorf("%s/%s has unknown hardware and should be omitted", omitted[0], omitted[1])
		}
	}
}

func TestKnownLookupAndIsolation(t *testing.T) {
	for _, n := range []string{"delta", "DELTA", " Delta@NCSA ", "ls6", "Lonestar6@tacc"} {
		if _, ok := Known(n); !ok {
			t.Errorf("Known(%q) not found", n)
		}
	}
	if _, ok := Known("perlmutter"); ok {
		t.Error("Known(perlmutter) found")
	}
	a, _ := Known("delta")
	a.Partitions[0].Features = append(a.Partitions[0].Features, "mutated")
	a.Partitions[0].Nodes = -1
	a.ContainerRuntimes[0] = "docker"
	b, _ := Known("delta")
	if b.Partitions[0].Nodes == -1 || b.ContainerRuntimes[0] != "apptainer" || slices.Contains(b.Partitions[0].Features, "mutated") {
		t.Error("Known returns shared state")
	}
	if got := KnownMachineNames(); len(got) != 6 || got[0] != "delta" {
		t.Errorf("KnownMachineNames = %v", got)
	}
}

// TestKnownGH200PartitionsMatchGH200: the built-in machines record a GH200's GPU as an
// H100 on an aarch64 host (with feature gh200); a GH200 request matches exactly those
// partitions through the catalogue, and no x86 H100 partition.
func TestKnownGH200PartitionsMatchGH200(t *testing.T) {
	n := 0
	for _, sys := range KnownMachines() {
		for _, p := range sys.Partitions {
			if p.GPUs == 0 {
				continue
			}
			want := slices.Contains(p.Features, "gh200")
			if got := model.GPUMatches("GH200", p.GPUModel, p.GPUMemoryGB, sys.Arch); got != want {
				t.Errorf("%s/%s (%s %d GB, %s): GH200 matches = %v, want %v", sys.Machine, p.Name, p.GPUModel, p.GPUMemoryGB, sys.Arch, got, want)
			}
			if want {
				n++
			}
		}
	}
	if n == 0 {
		t.Fatal("no known GH200 partition: the test proves nothing")
	}
}
