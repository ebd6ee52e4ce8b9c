package site

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: Parse must never panic, and any catalog it accepts must pass Validate
// unchanged (normalisation is idempotent and validation does not depend on the file).
func FuzzParse(f *testing.F) {
	// Small seeds only: the fuzzer minimises every new input it finds, and minimising
	// a multi-kilobyte file stalls fuzzing for minutes. The full default and example
	// files are covered by TestDefaultCatalog and TestExampleFileParses.
	f.Add([]byte(`sim: {speed: 60, seed: 1}
systems:
  - name: Delta@NCSA
    kind: sim
    machine: delta
    partitions:
      - {name: cpu, accounts: [demo-delta-cpu]}
      - {name: gpuA100x4, accounts: [demo-delta-gpu], max_walltime: "1-00:00:00"}
    sim:
      max_nodes: 8
      load: {utilization: 0.9, mean_runtime: 2h}
      faults:
        job_failure_prob: 0.02
        outages: [{start: 1h, duration: 10m}]
`))
	f.Add([]byte(`systems:
  - {name: a, kind: ssh, host: h, default_identity: refuse,
     users: [{name: alice, user: al, identity: k, account: p}, {name: bob, accounts: [q]}],
     partitions: [{name: c, nodes: 1, cpu_cores: 1, memory_gb: 1, accounts: [x]}]}
`))
	f.Add([]byte(`systems:
  - name: c
    kind: ssh
    dialect: pbs
    host: h
    ssh: {port: 22, options: [A=b], connect_timeout: 5s}
    accounts: [TODO-x]
    arch: arm64
    container_runtimes: [apptainer]
    partitions:
      - {name: q, nodes: 2, cpu_cores: 8, memory_gb: 16, gpus: 2, gpu_model: Quadro RTX 5000, gpu_memory_gb: 16, exclusive: true, charge_factor: 1.5}
`))
	f.Add([]byte("systems:\n  - {name: a, kind: local, partitions: [{name: p, nodes: 1, cpu_cores: 1, memory_gb: 1}]}\n"))
	f.Add([]byte("systems:\n  - {kind: sim, machine: ls6, accounts: [x], sim: {faults: {node_failures: [{partition: normal, nodes: 1, at: 1h, duration: 1m}]}}}\n"))
	f.Add([]byte("systems:\n  - &s {name: a, kind: globus, endpoint: 4b116d3c-1703-4f8f-9f6f-39921e5864df, partitions: [{<<: {nodes: 2}, name: p, cpu_cores: 1, memory_gb: 1, gpus: 1, gpu_model: a100, gpu_memory_gb: 1}]}\n  - *s\n"))
	f.Add([]byte("sim: {speed: .inf}\nsystems: [~]\n"))
	f.Add([]byte("systems:\n  - name: a\n  kind: [\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.yaml", data)
		if err != nil {
			if c != nil {
				t.Fatal("catalog returned with an error")
			}
			if len(AsErrors(err)) == 0 {
				t.Fatalf("error is not a catalog error: %T %v", err, err)
			}
			return
		}
		if _, err := Validate(c); err != nil {
			t.Fatalf("accepted catalog does not re-validate: %v\ninput:\n%s", err, data)
		}
		before := c.Clone()
		normalize(c)
		if _, err := Validate(c); err != nil {
			t.Fatalf("re-normalised catalog does not validate: %v", err)
		}
		for i := range c.Systems {
			if c.Systems[i].Dialect != before.Systems[i].Dialect || c.Systems[i].Arch != before.Systems[i].Arch {
				t.Fatalf("normalize not idempotent on system %d", i)
			}
		}
	})
}

func BenchmarkParseDefault(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("default.yaml", defaultYAML); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseExample(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("..", "..", "sites.example.yaml"))
	if err != nil {
		b.Skip("sites.example.yaml not found:", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("sites.example.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCanonicalGPUModel(b *testing.B) {
	for b.Loop() {
		CanonicalGPUModel("NVIDIA A100-SXM4-80GB")
	}
}
