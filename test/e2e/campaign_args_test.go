package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCampaignArgumentErrorsExit2: every argument or validation error of the
// campaign commands exits 2 before anything remote happens, with one message
// naming exactly what is wrong (the whole of stderr is compared); the
// positional campaign file is accepted. The sites are kind local, so nothing
// here would need a cluster: a launch that got past its checks would try to
// reach host "n" and fail with 1, not 2.
func TestCampaignArgumentErrorsExit2(t *testing.T) {
	e := newEnv(t)
	camp := exampleCampaign(t)
	dir := t.TempDir()
	sites := filepath.Join(dir, "sites.yaml")
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(sites, "systems:\n  - name: here\n    kind: local\n  - name: there\n    kind: local\n")
	bad := filepath.Join(dir, "bad.jsonc")
	write(bad, `{"name": 1}`)
	invalid := filepath.Join(dir, "invalid.jsonc")
	write(invalid, `{"name":"x","initial_agent":"zz","agents":[{"name":"a","command":["true"]}]}`)
	other := filepath.Join(dir, "other.jsonc")
	write(other, `{}`)
	root := filepath.Join(e.home, "state", "mosaic", "campaigns")
	// A damaged run directory: not an argument error (exit 1).
	if err := os.MkdirAll(filepath.Join(root, "broken"), 0o700); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(root, "broken", "state.json"), "{")

	launch := func(extra ...string) []string {
		return append([]string{"campaign", "launch", camp, "--run-id", "r1", "--sites", sites}, extra...)
	}
	both := "--site=here:attach=n;agents=coordinator"
	workers := "--site=there:attach=n;agents=worker-a,worker-b"
	const declared = "(declared: coordinator, worker-a, worker-b)"
	const unplaced = "no --site runs agent(s) worker-a, worker-b; add them to a site's agents= (their peers would wait for them forever)"
	cases := []struct {
		name string
		args []string
		code int
		want string // all of stderr, without the "mosaic: " of its first line
	}{
		{"unknown agent", launch("--site=here:attach=n;agents=coordinator,nosuch", workers), 2,
			`site here: agent(s) nosuch not declared by campaign "federated-chat" ` + declared},
		{"unknown agent, others unplaced", launch("--site=here:attach=n;agents=coordinator,nosuch"), 2,
			`site here: agent(s) nosuch not declared by campaign "federated-chat" ` + declared + "\n" + unplaced},
		{"duplicate agent", launch("--site=here:attach=n;agents=coordinator,coordinator", workers), 2,
			"site here: agent(s) coordinator listed more than once in agents="},
		{"agent on two sites", launch("--site=here:attach=n;agents=coordinator,worker-a", workers), 2,
			"agent worker-a is placed on both here and there; each agent runs on one site"},
		{"agents not placed", launch(both), 2, unplaced},
		{"site given twice", launch(both, "--site=here:attach=n;agents=worker-a,worker-b"), 2,
			"site here is given twice; put all of its agents in one --site"},
		{"site not in catalog", launch(both, "--site=nope:attach=n;agents=worker-a,worker-b"), 2,
			"site nope is not in the sites catalog (known: here, there)"},
		{"malformed --site", launch("--site=here:bogus", workers), 2,
			`--site "here:bogus": "bogus" is not key=value (keys: attach, jobid, agents, queue, walltime, nodes, account, workdir, campaign)`},
		{"--site without agents", launch("--site=here:attach=n", workers), 2,
			`--site "here:attach=n": attach mode needs agents=a,b (the slice to run in the allocation)`},
		{"bad run id", []string{"campaign", "launch", camp, "--run-id", "a b", "--site", both}, 2,
			`run id "a b": use 1-128 letters, digits and ._- (not starting with . or -)`},
		{"unparsable campaign", []string{"campaign", "launch", bad, "--run-id", "r1", "--site", both}, 2,
			bad + ":1: field name: expected string, got JSON number"},
		{"invalid campaign", []string{"campaign", "launch", invalid, "--run-id", "r1", "--sites", sites, "--site=here:attach=n;agents=a"}, 2,
			"campaign is invalid:\n" + invalid + `:1: initial_agent "zz" is not declared in this campaign (declared: a)`},
		{"missing file", []string{"campaign", "launch", filepath.Join(dir, "none.jsonc"), "--run-id", "r1", "--site", both}, 2,
			"open campaign file: open " + filepath.Join(dir, "none.jsonc") + ": no such file or directory"},
		{"two campaign files", []string{"campaign", "launch", camp, "--campaign", other, "--run-id", "r1", "--site", both}, 2,
			"two campaign files: " + camp + " (argument) and --campaign " + other + "; give one"},
		{"no campaign file", []string{"campaign", "launch", "--run-id", "r1", "--site", both}, 2,
			"no campaign file: pass it as the first argument (mosaic campaign launch FILE ...) or with --campaign FILE"},
		{"missing flags", []string{"campaign", "launch", camp}, 2, "missing --run-id, --site (see mosaic campaign launch --help)"},
		{"two arguments", []string{"campaign", "launch", camp, camp, "--run-id", "r1", "--site", both}, 2,
			"mosaic campaign launch takes one argument, the campaign file; got 2: " + camp + " " + camp},
		{"unknown flag", launch(both, workers, "--bogus"), 2, "unknown flag: --bogus"},
		{"bad flag value", launch(both, workers, "--startup-timeout", "soon"), 2,
			`invalid argument "soon" for "--startup-timeout" flag: time: invalid duration "soon"`},
		{"bad --tunnel", launch(both, workers, "--tunnel", "maybe"), 2, "--tunnel maybe: want auto, always or never"},
		{"conflicting exchange flags", launch(both, workers, "--exchange-url", "http://127.0.0.1:9", "--exchange-listen", "127.0.0.1:0"), 2,
			"--exchange-url http://127.0.0.1:9 names an external exchange, but --exchange-listen sets up the launcher's own; drop one or the other"},
		{"undeclared recipient", launch(both, workers, "--recipient", "nobody"), 2,
			`--recipient nobody is not an agent of campaign "federated-chat" ` + declared},
		{"same file twice is one file", []string{"campaign", "launch", camp, "--campaign", camp, "--run-id", "r1", "--sites", sites, both}, 2, unplaced},

		{"validate: unparsable", []string{"campaign", "validate", bad}, 2, bad + ":1: field name: expected string, got JSON number"},
		{"validate: invalid", []string{"campaign", "validate", invalid}, 2, invalid + `:1: initial_agent "zz" is not declared in this campaign (declared: a)`},
		{"validate: unknown slice agent", []string{"campaign", "validate", camp, "--agents", "nosuch"}, 2,
			camp + ": unknown agent(s) in selection: nosuch " + declared},
		{"ids: no run id", []string{"campaign", "ids", camp}, 2, "missing --run-id (see mosaic campaign ids --help)"},
		{"ids: bad run id", []string{"campaign", "ids", "--campaign", camp, "--run-id", "a/b"}, 2,
			`run id "a/b": use 1-128 letters, digits and ._- (not starting with . or -)`},
		{"spawn-site: unknown agent", []string{"campaign", "spawn-site", camp, "--run-id", "r1", "--agents", "nosuch"}, 2,
			camp + ": unknown agent(s) in selection: nosuch " + declared},
		{"spawn-site: missing flags", []string{"campaign", "spawn-site", camp}, 2, "missing --run-id, --agents (see mosaic campaign spawn-site --help)"},
		{"bootstrap: missing run id", []string{"campaign", "bootstrap", camp}, 2, "missing --run-id (see mosaic campaign bootstrap --help)"},
		{"status: unknown run", []string{"campaign", "status", "nope"}, 2,
			"unknown run nope: no run directory " + filepath.Join(root, "nope") + " (launched runs live under " + root + "; list them with `mosaic campaign status`)"},
		{"stop: unknown run", []string{"campaign", "stop", "nope"}, 2,
			"unknown run nope: no run directory " + filepath.Join(root, "nope") + " (launched runs live under " + root + "; list them with `mosaic campaign status`)"},
		{"stop: bad run id", []string{"campaign", "stop", "../x"}, 2, `run id "../x": use 1-128 letters, digits and ._- (not starting with . or -)`},
		{"stop: no run id", []string{"campaign", "stop"}, 2, "mosaic campaign stop takes one run id; got 0 arguments (list runs with `mosaic campaign status`)"},
		{"stop: damaged run is not a usage error", []string{"campaign", "stop", "broken", "--sites", sites}, 1,
			"run broken: state.json is damaged: unexpected end of JSON input"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			so, se, code := e.run(c.args...)
			want := "mosaic: " + c.want + "\n"
			if code != c.code || se != want {
				t.Errorf("mosaic %s\nexit %d, stderr:\n%s\nwant exit %d, stderr:\n%s", strings.Join(c.args, " "), code, se, c.code, want)
			}
			if so != "" {
				t.Errorf("stdout %q, want none", so)
			}
		})
	}
}

// TestCampaignBootstrapUndeclaredRecipient: bootstrap to an agent the campaign does
// not declare is refused at once (exit 2, naming the declared agents), while the
// exchange is up, instead of waiting out --startup-timeout for it.
func TestCampaignBootstrapUndeclaredRecipient(t *testing.T) {
	e := newEnv(t)
	camp := exampleCampaign(t)
	url, tok := exchangeServe(t, e, "boot-args", camp)
	e.vars = append(e.vars, "MOSAIC_EXCHANGE_TOKEN="+tok)
	start := time.Now()
	_, se, code := e.run("campaign", "bootstrap", camp, "--run-id", "boot-args", "--exchange-url", url, "--recipient", "nobody", "--startup-timeout", "40s")
	want := "mosaic: --recipient nobody is not an agent of campaign \"federated-chat\" (declared: coordinator, worker-a, worker-b)\n"
	if code != 2 || se != want {
		t.Errorf("exit %d, stderr %q; want exit 2, %q", code, se, want)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s; an undeclared recipient must be refused at once", d)
	}
}
