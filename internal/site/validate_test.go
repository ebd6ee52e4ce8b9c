package site

import (
	"errors"
	"strings"
	"testing"
)

// Each case is a whole small file; want is the "file:line: field" prefix the first
// matching error must start with, and msg a substring of that error.
func TestParseErrors(t *testing.T) {
	const part = "      - {name: p, nodes: 1, cpu_cores: 4, memory_gb: 8}\n"
	cases := []struct {
		name, yaml, want, msg string
	}{
		{"malformed yaml", "systems:\n  - name: a\n    kind: local\n   bad: [\n", "t.yaml:4", "invalid YAML"},
		{"unterminated quote", "systems:\n  - name: \"a\n    kind: local\n", "t.yaml:2", "invalid YAML"},
		{"unknown anchor", "systems:\n  - &x {name: a}\n  - *y\n", "t.yaml:3", "unknown anchor"},
		{"bad last line without newline", "systems:\n  - name: a\n    kind: local\n  bad", "t.yaml:4", "invalid YAML"},
		{"tab indentation", "systems:\n\t- name: a\n", "t.yaml:2", "invalid YAML"},
		{"empty file", "", "t.yaml:1", "empty"},
		{"comment only", "# nothing\n", "t.yaml:1", "empty"},
		{"two documents", "systems: []\n---\nsystems: []\n", "t.yaml:2", "more than one YAML document"},
		{"top level not a mapping", "- a\n- b\n", "t.yaml:1", "want a mapping"},
		{"no systems", "sim: {speed: 2}\n", "t.yaml", "systems: at least one system"},
		{"unknown top-level field", "sytems: []\n", "t.yaml:1: sytems", `did you mean "systems"`},
		{"unknown system field", "systems:\n  - name: a\n    kind: local\n    hots: x\n    partitions:\n" + part,
			"t.yaml:4: systems[0].hots", `did you mean "host"`},
		{"unknown partition field", "systems:\n  - name: a\n    kind: local\n    partitions:\n      - {name: p, nodes: 1, cpu_cores: 4, memory_gb: 8, gpu_modle: A100}\n",
			"t.yaml:5: systems[0].partitions[0].gpu_modle", `did you mean "gpu_model"`},
		{"unknown field far from any", "systems:\n  - name: a\n    kind: local\n    zzzzzzzz: 1\n    partitions:\n" + part,
			"t.yaml:4: systems[0].zzzzzzzz", "unknown field; known fields here:"},
		{"duplicate key", "systems:\n  - name: a\n    kind: local\n    kind: ssh\n    partitions:\n" + part,
			"t.yaml:4: systems[0].kind", "duplicate field (first given on line 3)"},
		{"unknown kind", "systems:\n  - name: a\n    kind: shh\n    partitions:\n" + part,
			"t.yaml:3: systems[0].kind", `got "shh" (did you mean "ssh"?)`},
		{"missing kind", "systems:\n  - name: a\n    partitions:\n" + part,
			"t.yaml:2: systems[0].kind", "required"},
		{"unknown dialect", "systems:\n  - name: a\n    kind: local\n    dialect: lsf\n    partitions:\n" + part,
			"t.yaml:4: systems[0].dialect", `must be slurm or pbs, got "lsf"`},
		{"unknown own-job order", "systems:\n  - name: a\n    kind: local\n    order_own_jobs: shortest\n    partitions:\n" + part,
			"t.yaml:4: systems[0].order_own_jobs", `must be submission or smallest-first, got "shortest"`},
		{"smallest-first on PBS", "systems:\n  - name: a\n    kind: local\n    dialect: pbs\n    order_own_jobs: smallest-first\n    partitions:\n" + part,
			"t.yaml:5: systems[0].order_own_jobs", "needs Slurm's --nice"},
		{"smallest-first on a simulated system", "systems:\n  - name: a\n    kind: sim\n    order_own_jobs: smallest-first\n    partitions:\n" + part,
			"t.yaml:4: systems[0].order_own_jobs", "a simulated system's queue ignores nice"},
		{"nice step without smallest-first", "systems:\n  - name: a\n    kind: local\n    order_nice_step: 4\n    partitions:\n" + part,
			"t.yaml:4: systems[0].order_nice_step", "applies only with order_own_jobs: smallest-first"},
		{"negative nice step", "systems:\n  - name: a\n    kind: local\n    order_own_jobs: smallest-first\n    order_nice_step: -4\n    partitions:\n" + part,
			"t.yaml:5: systems[0].order_nice_step", "must be 1 to 1000"},
		{"nice step too large", "systems:\n  - name: a\n    kind: local\n    order_own_jobs: smallest-first\n    order_nice_step: 5000\n    partitions:\n" + part,
			"t.yaml:5: systems[0].order_nice_step", "must be 1 to 1000"},
		{"nice step not a number", "systems:\n  - name: a\n    kind: local\n    order_own_jobs: smallest-first\n    order_nice_step: four\n    partitions:\n" + part,
			"t.yaml:5: systems[0].order_nice_step", "want a whole number"},
		{"missing name", "systems:\n  - kind: local\n    partitions:\n" + part,
			"t.yaml:2: systems[0].name", "required"},
		{"name with space", "systems:\n  - name: my cluster\n    kind: local\n    partitions:\n" + part,
			"t.yaml:2: systems[0].name", "no spaces"},
		{"duplicate system names", "systems:\n  - name: A\n    kind: local\n    partitions:\n" + part +
			"  - name: a\n    kind: local\n    partitions:\n" + part,
			"t.yaml:6: systems[1].name", `duplicate system name "a"`},
		{"duplicate partition names", "systems:\n  - name: a\n    kind: local\n    partitions:\n" + part + part,
			"t.yaml:6: systems[0].partitions[1].name", `duplicate partition name "p"`},
		{"negative gpus", "systems:\n  - name: a\n    kind: local\n    partitions:\n      - name: p\n        nodes: 1\n        cpu_cores: 4\n        memory_gb: 8\n        gpus: -2\n",
			"t.yaml:9: systems[0].partitions[0].gpus", "must be >= 0, got -2"},
		{"zero nodes", "systems:\n  - name: a\n    kind: local\n    partitions:\n      - name: p\n        nodes: 0\n        cpu_cores: 4\n        memory_gb: 8\n",
			"t.yaml:6: systems[0].partitions[0].nodes", "must be >= 1, got 0"},
		{"missing cpu_cores", "systems:\n  - name: a\n    kind: local\n    partitions:\n      - name: p\n        nodes: 1\n        memory_gb: 8\n",
			"t.yaml:5: systems[0].partitions[0].cpu_cores", "must be >= 1"},
		{"negative memory", "systems:\n  - name: a\n    kind: local\n    partitions:\n      - name: p\n        nodes: 1\n        cpu_cores: 4\n        memory_gb: -8\n",
			"t.yaml:8: systems[0].partitions[0].memory_gb", "must be >= 1"},
		{"negative max_nodes_per_job", "systems:\n  - name: a\n    kind: local\n    partitions:\n      - {name: p, nodes: 1, cpu_cores: 4, memory_gb: 8,\n         max_nodes_per_job: -1}\n",
			"t.yaml:6: systems[0].partitions[0].max_nodes_per_job", "must be >= 0"},
		{"not a number", "systems:\n  - name: a\n    kind: local\n    partitions:\n      - name: p\n        nodes: lots\n        cpu_cores: 4\n        memory_gb: 8\n",
			"t.yaml:6: systems[0].partitions[0].nodes", `want a whole number, got "lots"`},
		{"list where mapping", "systems:\n  - name: a\n    kind: local\n    partitions: cpu\n",
			"t.yaml:4: systems[0].partitions", "want a list"},
		{"mapping where scalar", "systems:\n  - name: {x: 1}\n    kind: local\n    partitions:\n" + part,
			"t.yaml:2: systems[0].name", "want a single value"},
		{"gpus without model", "systems:\n  - name: a\n    kind: local\n    partitions:\n      - name: g\n        nodes: 1\n        cpu_cores: 4\n        memory_gb: 8\n        gpus: 4\n        gpu_memory_gb: 40\n",
			"t.yaml:5: systems[0].partitions[0].gpu_model", "required when gpus > 0"},
		{"gpus without memory", "systems:\n  - name: a\n    kind: local\n    partitions:\n      - name: g\n        nodes: 1\n        cpu_cores: 4\n        memory_gb: 8\n        gpus: 4\n        gpu_model: A100\n",
			"t.yaml:5: systems[0].partitions[0].gpu_memory_gb", "must be > 0 when gpus > 0"},
		{"model without gpus", "systems:\n  - name: a\n    kind: local\n    partitions:\n      - name: g\n        nodes: 1\n        cpu_cores: 4\n        memory_gb: 8\n        gpu_model: A100\n",
			"t.yaml:5: systems[0].partitions[0].gpus", "gpus is 0"},
		{"bad system arch", "systems:\n  - name: a\n    kind: local\n    arch: sparc\n    partitions:\n" + part,
			"t.yaml:4: systems[0].arch", `must be x86_64 or aarch64 (amd64/arm64 accepted), got "sparc"`},
		{"bad partition arch", "systems:\n  - name: a\n    kind: local\n    partitions:\n      - name: p\n        nodes: 1\n        cpu_cores: 4\n        memory_gb: 8\n        arch: ppc64le\n",
			"t.yaml:9: systems[0].partitions[0].arch", "must be x86_64 or aarch64"},
		{"ssh without host", "systems:\n  - name: a\n    kind: ssh\n    partitions:\n" + part,
			"t.yaml:2: systems[0].host", "required for kind ssh"},
		{"ssh bad port", "systems:\n  - name: a\n    kind: ssh\n    host: h\n    ssh:\n      port: 70000\n    partitions:\n" + part,
			"t.yaml:6: systems[0].ssh.port", "must be 0–65535"},
		{"ssh bad option", "systems:\n  - name: a\n    kind: ssh\n    host: h\n    ssh:\n      options: [BatchMode yes]\n    partitions:\n" + part,
			"t.yaml:6: systems[0].ssh.options[0]", "want Key=Value"},
		{"ssh block on local", "systems:\n  - name: a\n    kind: local\n    ssh: {port: 22}\n    partitions:\n" + part,
			"t.yaml:4: systems[0].ssh", "only for kind ssh"},
		{"globus without endpoint", "systems:\n  - name: a\n    kind: globus\n    partitions:\n" + part,
			"t.yaml:2: systems[0].endpoint", "required for kind globus"},
		{"globus bad endpoint uuid", "systems:\n  - name: a\n    kind: globus\n    endpoint: 4b116d3c-1703-4f8f-9f6f\n    partitions:\n" + part,
			"t.yaml:4: systems[0].endpoint", "must be a UUID"},
		{"no partitions", "systems:\n  - name: a\n    kind: sim\n    accounts: [x]\n",
			"t.yaml:2: systems[0].partitions", "at least one partition"},
		{"unknown machine", "systems:\n  - kind: sim\n    machine: deltax\n",
			"t.yaml:3: systems[0].machine", `did you mean "delta"?`},
		{"negative walltime", "systems:\n  - name: a\n    kind: local\n    partitions:\n      - name: p\n        nodes: 1\n        cpu_cores: 4\n        memory_gb: 8\n        max_walltime: -1h\n",
			"t.yaml:9: systems[0].partitions[0].max_walltime", "must be positive"},
		{"unparsable walltime", "systems:\n  - name: a\n    kind: local\n    partitions:\n      - name: p\n        nodes: 1\n        cpu_cores: 4\n        memory_gb: 8\n        max_walltime: forever\n",
			"t.yaml:9: systems[0].partitions[0].max_walltime", "forever"},
		{"negative charge factor", "systems:\n  - name: a\n    kind: local\n    partitions:\n      - name: p\n        nodes: 1\n        cpu_cores: 4\n        memory_gb: 8\n        charge_factor: -0.5\n",
			"t.yaml:9: systems[0].partitions[0].charge_factor", "must be >= 0"},
		{"nan charge factor", "systems:\n  - name: a\n    kind: local\n    partitions:\n      - name: p\n        nodes: 1\n        cpu_cores: 4\n        memory_gb: 8\n        charge_factor: .nan\n",
			"t.yaml:9: systems[0].partitions[0].charge_factor", "must be >= 0"},
		{"empty account", "systems:\n  - name: a\n    kind: local\n    accounts: [\"\"]\n    partitions:\n" + part,
			"t.yaml:4: systems[0].accounts[0]", "empty account name"},
		{"sim block on ssh", "systems:\n  - name: a\n    kind: ssh\n    host: h\n    sim: {max_nodes: 4}\n    partitions:\n" + part,
			"t.yaml:5: systems[0].sim", "only for kind sim"},
		{"sim without accounts", "systems:\n  - name: a\n    kind: sim\n    partitions:\n" + part,
			"t.yaml:5: systems[0].partitions[0].accounts", "needs an account"},
		{"job failure prob above 1", "systems:\n  - name: a\n    kind: sim\n    accounts: [x]\n    partitions:\n" + part +
			"    sim:\n      faults:\n        job_failure_prob: 1.5\n",
			"t.yaml:9: systems[0].sim.faults.job_failure_prob", "within [0,1], got 1.5"},
		{"utilization too high", "systems:\n  - name: a\n    kind: sim\n    accounts: [x]\n    partitions:\n" + part +
			"    sim:\n      load: {utilization: 2}\n",
			"t.yaml:8: systems[0].sim.load.utilization", "between 0 and 1.5"},
		{"negative outage start", "systems:\n  - name: a\n    kind: sim\n    accounts: [x]\n    partitions:\n" + part +
			"    sim:\n      faults:\n        outages:\n          - start: -1h\n            duration: 1h\n",
			"t.yaml:10: systems[0].sim.faults.outages[0].start", "must be >= 0"},
		{"zero outage duration", "systems:\n  - name: a\n    kind: sim\n    accounts: [x]\n    partitions:\n" + part +
			"    sim:\n      faults:\n        outages:\n          - {start: 1h}\n",
			"t.yaml:10: systems[0].sim.faults.outages[0].duration", "must be > 0"},
		{"node failure on unknown partition", "systems:\n  - name: a\n    kind: sim\n    accounts: [x]\n    partitions:\n" + part +
			"    sim:\n      faults:\n        node_failures:\n          - partition: q\n            nodes: 1\n            at: 1h\n            duration: 1h\n",
			"t.yaml:10: systems[0].sim.faults.node_failures[0].partition", `no partition "q"`},
		{"node failure too many nodes", "systems:\n  - name: a\n    kind: sim\n    accounts: [x]\n    partitions:\n" + part +
			"    sim:\n      faults:\n        node_failures:\n          - {partition: p, nodes: 5, at: 1h, duration: 1h}\n",
			"t.yaml:10: systems[0].sim.faults.node_failures[0].nodes", "only 1 nodes"},
		{"machine partition override bad", "systems:\n  - kind: sim\n    machine: delta\n    accounts: [x]\n    partitions:\n      - name: gpuA100x4\n        gpus: -1\n",
			"t.yaml:7: systems[0].partitions[0].gpus", "must be >= 0, got -1"},
		{"negative sim speed", "sim: {speed: -1}\nsystems:\n  - name: a\n    kind: local\n    partitions:\n" + part,
			"t.yaml:1: sim.speed", "must be >= 0"},
		{"bad merge key", "systems:\n  - <<: 5\n    name: a\n", "t.yaml:2: systems[0]", "merge key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("t.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("Parse accepted invalid input; catalog: %+v", c)
			}
			if c != nil {
				t.Errorf("Parse returned a catalog along with an error")
			}
			es := AsErrors(err)
			if len(es) == 0 {
				t.Fatalf("error is not a site.Errors/*Error: %T %v", err, err)
			}
			for _, e := range es {
				if strings.HasPrefix(e.Error(), tc.want) && strings.Contains(e.Error(), tc.msg) {
					return
				}
			}
			t.Errorf("no error starts with %q and contains %q; got:\n%v", tc.want, tc.msg, err)
		})
	}
}

func TestParseCollectsAllValidationErrors(t *testing.T) {
	in := `systems:
  - name: a
    kind: ssh
    dialect: lsf
    partitions:
      - {name: p, nodes: -1, cpu_cores: 4, memory_gb: 8, gpus: 2}
  - name: a
    kind: globus
    endpoint: nope
    partitions:
      - {name: q, nodes: 1, cpu_cores: 4, memory_gb: 8}
`
	_, err := Parse("multi.yaml", []byte(in))
	es := AsErrors(err)
	want := []string{
		"multi.yaml:2: systems[0].host",
		"multi.yaml:4: systems[0].dialect",
		"multi.yaml:6: systems[0].partitions[0].nodes",
		"multi.yaml:6: systems[0].partitions[0].gpu_model",
		"multi.yaml:6: systems[0].partitions[0].gpu_memory_gb",
		"multi.yaml:7: systems[1].name",
		"multi.yaml:9: systems[1].endpoint",
	}
	for _, w := range want {
		found := false
		for _, e := range es {
			found = found || strings.HasPrefix(e.Error(), w)
		}
		if !found {
			t.Errorf("missing error %q in:\n%v", w, err)
		}
	}
	if len(es) != len(want) {
		t.Errorf("got %d errors, want %d:\n%v", len(es), len(want), err)
	}
	// Errors come out in line order.
	for i := 1; i < len(es); i++ {
		if es[i].Line < es[i-1].Line {
			t.Errorf("errors not in line order: %v", err)
		}
	}
	var one *Error
	if !errors.As(err, &one) || one.File != "multi.yaml" {
		t.Errorf("errors.As(*Error) = %v", one)
	}
}

func TestWarnings(t *testing.T) {
	in := `systems:
  - name: a
    kind: ssh
    host: h
    accounts: [TODO-your-allocation]
    container_runtimes: [apptainr]
    partitions:
      - {name: p, nodes: 1, cpu_cores: 4, memory_gb: 8, gpus: 1, gpu_model: Z9000, gpu_memory_gb: 8}
`
	c, err := Parse("w.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"w.yaml:5: systems[0].accounts[0]: account \"TODO-your-allocation\" is a placeholder",
		"w.yaml:6: systems[0].container_runtimes[0]: unknown container runtime \"apptainr\" (did you mean \"apptainer\"?)",
		"w.yaml:8: systems[0].partitions[0].gpu_model: unknown GPU model \"Z9000\"",
	}
	if len(c.Warnings) != len(want) {
		t.Fatalf("warnings = %q, want %d", c.Warnings, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(c.Warnings[i], w) {
			t.Errorf("warning %d = %q, want prefix %q", i, c.Warnings[i], w)
		}
	}
}

func TestValidateBuiltInCatalog(t *testing.T) {
	c := &Catalog{Systems: []System{{Name: "x", Kind: "sim", Line: 7,
		Partitions: []Partition{{Name: "p", Nodes: 1, CPUCores: 1, MemoryGB: 1, Line: 9}}}}}
	_, err := Validate(c)
	es := AsErrors(err)
	if len(es) != 1 || es[0].Line != 9 || es[0].Field != "systems[0].partitions[0].accounts" ||
		!strings.HasPrefix(es[0].Error(), "(built-in catalog):9:") {
		t.Fatalf("Validate = %v", err)
	}
	if _, err := Validate(nil); err == nil {
		t.Error("Validate(nil) accepted")
	}
}

// TestOrderNiceStepParses: a Slurm system ordering smallest first takes a step, and a
// catalog without one leaves it 0 (the provider's default).
func TestOrderNiceStepParses(t *testing.T) {
	const part = "      - {name: p, nodes: 1, cpu_cores: 4, memory_gb: 8}\n"
	c, err := Parse("t.yaml", []byte("systems:\n  - name: a\n    kind: local\n    order_own_jobs: smallest-first\n    order_nice_step: 4\n    partitions:\n"+part+
		"  - name: b\n    kind: local\n    order_own_jobs: smallest-first\n    partitions:\n"+part))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.System("a")
	b, _ := c.System("b")
	if a.OrderNiceStep != 4 || b.OrderNiceStep != 0 {
		t.Errorf("steps %d and %d, want 4 and 0", a.OrderNiceStep, b.OrderNiceStep)
	}
}
