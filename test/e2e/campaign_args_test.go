package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The CLI's exit statuses (README.md, "Exit codes"): Mosaic's own failures are
// 125 and above, so they never read as a job's exit code.
const (
	exitMosaic    = 125 // Mosaic could not do it (the core, a site, the exchange)
	exitUsage     = 126 // an argument, flag or input file is wrong; nothing was done
	exitNotFound  = 127 // what was named does not exist
	exitCancelled = 143 // the task waited for was cancelled
)

// TestCampaignArgumentErrorsExitUsage: every argument or validation error of the
// campaign commands exits 126 (exitUsage) before anything remote happens, with one message
// naming exactly what is wrong (the whole of stderr is compared); the
// positional campaign file is accepted. The sites are kind local, so nothing
// here would need a cluster: a launch that got past its checks would try to
// reach host "n" and fail with 125, not 126.
func TestCampaignArgumentErrorsExitUsage(t *testing.T) {
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
	// A run directory that reads (what it says does not matter to these checks).
	if err := os.MkdirAll(filepath.Join(root, "idle"), 0o700); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(root, "idle", "state.json"), `{"run_id": "idle"}`)

	launch := func(extra ...string) []string {
		return append([]string{"campaign", "launch", camp, "--run-id", "r1", "--sites", sites}, extra...)
	}
	both := "--site=here:attach=n;agents=coordinator"
	workers := "--site=there:attach=n;agents=worker-a,worker-b"
	const declared = "(declared: coordinator, worker-a, worker-b)"
	unknownRun := "unknown run nope: no run directory " + filepath.Join(root, "nope") + " (launched runs live under " + root + "; list them with `mosaic campaign status`)"
	const unplaced = "no --site runs agent(s) worker-a, worker-b; add them to a site's agents= (their peers would wait for them forever)"
	cases := []struct {
		name string
		args []string
		code int
		want string // all of stderr, without the "mosaic: " of its first line
	}{
		{"unknown agent", launch("--site=here:attach=n;agents=coordinator,nosuch", workers), exitUsage,
			`site here: agent(s) nosuch not declared by campaign "federated-chat" ` + declared},
		{"unknown agent, others unplaced", launch("--site=here:attach=n;agents=coordinator,nosuch"), exitUsage,
			`site here: agent(s) nosuch not declared by campaign "federated-chat" ` + declared + "\n" + unplaced},
		{"duplicate agent", launch("--site=here:attach=n;agents=coordinator,coordinator", workers), exitUsage,
			"site here: agent(s) coordinator listed more than once in agents="},
		{"agent on two sites", launch("--site=here:attach=n;agents=coordinator,worker-a", workers), exitUsage,
			"agent worker-a is placed on both here and there; each agent runs on one site"},
		{"agents not placed", launch(both), exitUsage, unplaced},
		{"site given twice", launch(both, "--site=here:attach=n;agents=worker-a,worker-b"), exitUsage,
			"site here is given twice; put all of its agents in one --site"},
		{"site not in catalog", launch(both, "--site=nope:attach=n;agents=worker-a,worker-b"), exitUsage,
			"site nope is not in the sites catalog (known: here, there)"},
		{"malformed --site", launch("--site=here:bogus", workers), exitUsage,
			`--site "here:bogus": "bogus" is not key=value (keys: attach, jobid, agents, queue, walltime, nodes, account, workdir, campaign)`},
		{"--site without agents", launch("--site=here:attach=n", workers), exitUsage,
			`--site "here:attach=n": attach mode needs agents=a,b (the slice to run in the allocation)`},
		{"bad run id", []string{"campaign", "launch", camp, "--run-id", "a b", "--site", both}, exitUsage,
			`run id "a b": use 1-128 letters, digits and ._- (not starting with . or -)`},
		{"unparsable campaign", []string{"campaign", "launch", bad, "--run-id", "r1", "--site", both}, exitUsage,
			bad + ":1: field name: expected string, got JSON number"},
		{"invalid campaign", []string{"campaign", "launch", invalid, "--run-id", "r1", "--sites", sites, "--site=here:attach=n;agents=a"}, exitUsage,
			"campaign is invalid:\n" + invalid + `:1: initial_agent "zz" is not declared in this campaign (declared: a)`},
		{"missing file", []string{"campaign", "launch", filepath.Join(dir, "none.jsonc"), "--run-id", "r1", "--site", both}, exitUsage,
			"open campaign file: open " + filepath.Join(dir, "none.jsonc") + ": no such file or directory"},
		{"two campaign files", []string{"campaign", "launch", camp, "--campaign", other, "--run-id", "r1", "--site", both}, exitUsage,
			"two campaign files: " + camp + " (argument) and --campaign " + other + "; give one"},
		{"no campaign file", []string{"campaign", "launch", "--run-id", "r1", "--site", both}, exitUsage,
			"no campaign file: pass it as the first argument (mosaic campaign launch FILE ...) or with --campaign FILE"},
		{"missing flags", []string{"campaign", "launch", camp}, exitUsage, "missing --run-id, --site (see mosaic campaign launch --help)"},
		{"two arguments", []string{"campaign", "launch", camp, camp, "--run-id", "r1", "--site", both}, exitUsage,
			"mosaic campaign launch takes one argument, the campaign file; got 2: " + camp + " " + camp},
		{"unknown flag", launch(both, workers, "--bogus"), exitUsage, "unknown flag: --bogus\nRun 'mosaic campaign launch --help' for usage."},
		{"bad flag value", launch(both, workers, "--startup-timeout", "soon"), exitUsage,
			`invalid argument "soon" for "--startup-timeout" flag: time: invalid duration "soon"` + "\nRun 'mosaic campaign launch --help' for usage."},
		{"bad --tunnel", launch(both, workers, "--tunnel", "maybe"), exitUsage, "--tunnel maybe: want auto, always or never"},
		{"conflicting exchange flags", launch(both, workers, "--exchange-url", "http://127.0.0.1:9", "--exchange-listen", "127.0.0.1:0"), exitUsage,
			"--exchange-url http://127.0.0.1:9 names an external exchange, but --exchange-listen sets up the launcher's own; drop one or the other"},
		{"undeclared recipient", launch(both, workers, "--recipient", "nobody"), exitUsage,
			`--recipient nobody is not an agent of campaign "federated-chat" ` + declared},
		{"same file twice is one file", []string{"campaign", "launch", camp, "--campaign", camp, "--run-id", "r1", "--sites", sites, both}, exitUsage, unplaced},

		{"validate: unparsable", []string{"campaign", "validate", bad}, exitUsage, bad + ":1: field name: expected string, got JSON number"},
		{"validate: invalid", []string{"campaign", "validate", invalid}, exitUsage, invalid + `:1: initial_agent "zz" is not declared in this campaign (declared: a)`},
		{"validate: unknown slice agent", []string{"campaign", "validate", camp, "--agents", "nosuch"}, exitUsage,
			camp + ": unknown agent(s) in selection: nosuch " + declared},
		{"ids: no run id", []string{"campaign", "ids", camp}, exitUsage, "missing --run-id (see mosaic campaign ids --help)"},
		{"ids: bad run id", []string{"campaign", "ids", "--campaign", camp, "--run-id", "a/b"}, exitUsage,
			`run id "a/b": use 1-128 letters, digits and ._- (not starting with . or -)`},
		{"spawn-site: unknown agent", []string{"campaign", "spawn-site", camp, "--run-id", "r1", "--agents", "nosuch"}, exitUsage,
			camp + ": unknown agent(s) in selection: nosuch " + declared},
		{"spawn-site: missing flags", []string{"campaign", "spawn-site", camp}, exitUsage, "missing --run-id, --agents (see mosaic campaign spawn-site --help)"},
		{"bootstrap: missing run id", []string{"campaign", "bootstrap", camp}, exitUsage, "missing --run-id (see mosaic campaign bootstrap --help)"},
		{"status: unknown run", []string{"campaign", "status", "nope"}, exitUsage,
			"unknown run nope: no run directory " + filepath.Join(root, "nope") + " (launched runs live under " + root + "; list them with `mosaic campaign status`)"},
		{"stop: unknown run", []string{"campaign", "stop", "nope"}, exitUsage,
			"unknown run nope: no run directory " + filepath.Join(root, "nope") + " (launched runs live under " + root + "; list them with `mosaic campaign status`)"},
		{"stop: bad run id", []string{"campaign", "stop", "../x"}, exitUsage, `run id "../x": use 1-128 letters, digits and ._- (not starting with . or -)`},
		{"stop: no run id", []string{"campaign", "stop"}, exitUsage, "mosaic campaign stop takes one run id; got 0 arguments (list runs with `mosaic campaign status`)"},
		{"stop: damaged run is not a usage error", []string{"campaign", "stop", "broken", "--sites", sites}, exitMosaic,
			"run broken: state.json is damaged: unexpected end of JSON input"},
		{"stop: unknown run, whatever the catalog", []string{"campaign", "stop", "nope", "--sites", filepath.Join(dir, "none.yaml")}, exitUsage, unknownRun},
		{"status: unknown run, whatever the catalog", []string{"campaign", "status", "nope", "--sites", filepath.Join(dir, "none.yaml")}, exitUsage, unknownRun},

		// timeline and resume name an unknown run as status and stop do, before
		// anything else (resume's sites catalog).
		{"timeline: unknown run", []string{"campaign", "timeline", "nope"}, exitUsage, unknownRun},
		{"timeline: bad run id", []string{"campaign", "timeline", "../x"}, exitUsage, `run id "../x": use 1-128 letters, digits and ._- (not starting with . or -)`},
		{"timeline: no run id", []string{"campaign", "timeline"}, exitUsage, "mosaic campaign timeline takes one run id; got 0 arguments (list runs with `mosaic campaign status`)"},
		{"timeline: damaged run is not a usage error", []string{"campaign", "timeline", "broken"}, exitMosaic,
			"run broken: state.json is damaged: unexpected end of JSON input"},
		{"resume: unknown run, no sites catalog", []string{"campaign", "resume", "nope"}, exitUsage, unknownRun},
		{"resume: unknown run", []string{"campaign", "resume", "nope", "--sites", sites}, exitUsage, unknownRun},
		{"resume: bad run id", []string{"campaign", "resume", "a b"}, exitUsage, `run id "a b": use 1-128 letters, digits and ._- (not starting with . or -)`},
		{"resume: two run ids", []string{"campaign", "resume", "a", "b"}, exitUsage, "mosaic campaign resume takes one run id; got 2 arguments (list runs with `mosaic campaign status`)"},
		{"resume: no sites catalog", []string{"campaign", "resume", "idle"}, exitUsage,
			"no sites catalog: pass --sites FILE or set MOSAIC_SITES (the run's sites are followed through it)"},
		{"resume: damaged run is not a usage error", []string{"campaign", "resume", "broken", "--sites", sites}, exitMosaic,
			"run broken: state.json is damaged: unexpected end of JSON input"},

		// agent run: the same checks as the campaign commands, before any exchange.
		{"agent run: missing flags", []string{"agent", "run", camp}, exitUsage, "missing --run-id, --name (see mosaic agent run --help)"},
		{"agent run: no campaign file", []string{"agent", "run", "--run-id", "r1", "--name", "coordinator"}, exitUsage,
			"no campaign file: pass it as the first argument (mosaic agent run FILE ...) or with --campaign FILE"},
		{"agent run: missing file", []string{"agent", "run", filepath.Join(dir, "none.jsonc"), "--run-id", "r1", "--name", "coordinator"}, exitUsage,
			"open campaign file: open " + filepath.Join(dir, "none.jsonc") + ": no such file or directory"},
		{"agent run: missing --campaign file", []string{"agent", "run", "--campaign", filepath.Join(dir, "none.jsonc"), "--run-id", "r1", "--name", "coordinator"}, exitUsage,
			"open campaign file: open " + filepath.Join(dir, "none.jsonc") + ": no such file or directory"},
		{"agent run: unparsable campaign", []string{"agent", "run", bad, "--run-id", "r1", "--name", "a"}, exitUsage, bad + ":1: field name: expected string, got JSON number"},
		{"agent run: undeclared name", []string{"agent", "run", camp, "--run-id", "r1", "--name", "nobody"}, exitUsage,
			`--name nobody is not an agent of campaign "federated-chat" ` + declared},
		{"agent run: bad run id", []string{"agent", "run", "--campaign", camp, "--run-id", "a/b", "--name", "coordinator"}, exitUsage,
			`run id "a/b": use 1-128 letters, digits and ._- (not starting with . or -)`},
		{"agent run: two campaign files", []string{"agent", "run", camp, "--campaign", other, "--run-id", "r1", "--name", "coordinator", "--", "true"}, exitUsage,
			"two campaign files: " + camp + " (argument) and --campaign " + other + "; give one"},
		{"agent run: a command without --", []string{"agent", "run", camp, "true", "--run-id", "r1", "--name", "coordinator"}, exitUsage,
			"mosaic agent run takes one argument before --, the campaign file; got 2: " + camp + " true (put the agent's command after --)"},
		{"agent run: bad exchange URL", []string{"agent", "run", camp, "--run-id", "r1", "--name", "coordinator", "--exchange-url", "ftp://x"}, exitUsage,
			`exchange URL "ftp://x" is not an http(s) URL; check MOSAIC_EXCHANGE_URL`},
		{"agent run: no exchange URL", []string{"agent", "run", camp, "--run-id", "r1", "--name", "coordinator"}, exitUsage,
			"no exchange URL: pass --exchange-url, export MOSAIC_EXCHANGE_URL, or set exchange.url in the campaign"},
		{"agent run: bad --exchange-type", []string{"agent", "run", camp, "--run-id", "r1", "--name", "coordinator", "--exchange-type", "zmq"}, exitUsage,
			`exchange type "zmq" is not known: use mosaic (Mosaic's own exchange, the default) or academy (Academy's hosted exchange with a Globus token; http is the same)`},
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
// not declare is refused at once (exit 126, naming the declared agents), while the
// exchange is up, instead of waiting out --startup-timeout for it.
func TestCampaignBootstrapUndeclaredRecipient(t *testing.T) {
	e := newEnv(t)
	camp := exampleCampaign(t)
	url, tok := exchangeServe(t, e, "boot-args", camp)
	e.vars = append(e.vars, "MOSAIC_EXCHANGE_TOKEN="+tok)
	start := time.Now()
	_, se, code := e.run("campaign", "bootstrap", camp, "--run-id", "boot-args", "--exchange-url", url, "--recipient", "nobody", "--startup-timeout", "40s")
	want := "mosaic: --recipient nobody is not an agent of campaign \"federated-chat\" (declared: coordinator, worker-a, worker-b)\n"
	if code != exitUsage || se != want {
		t.Errorf("exit %d, stderr %q; want exit %d, %q", code, se, exitUsage, want)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s; an undeclared recipient must be refused at once", d)
	}
}

// TestCampaignBootstrapExchangeErrors: bootstrap's own checks of the exchange
// settings (the URL's shape, the token in $MOSAIC_EXCHANGE_TOKEN) are usage errors
// (exit 126), but an exchange that is down or fails — the Academy bearer check's
// network call answered 500, or refused — is the work failing (exit 125), not a
// wrong argument. The Academy exchange here is a 127.0.0.1 server answering 500
// to every request, as a failing hosted exchange would.
func TestCampaignBootstrapExchangeErrors(t *testing.T) {
	e := newEnv(t)
	camp := exampleCampaign(t)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "internal error", http.StatusInternalServerError)
	}))
	defer failing.Close()
	refused := "http://" + freeAddr(t)
	const globus = "AgGlobusAccessToken0123456789" // shaped like a Globus access token; never sent beyond 127.0.0.1
	boot := func(url, tok string, extra ...string) ([]string, []string) {
		return append([]string{"campaign", "bootstrap", camp, "--run-id", "r1", "--exchange-url", url}, extra...), []string{"MOSAIC_EXCHANGE_TOKEN=" + tok}
	}
	for _, c := range []struct {
		name string
		args func() ([]string, []string)
		code int
		want string // a part of stderr
	}{
		{"academy exchange answers 500", func() ([]string, []string) { return boot(failing.URL, globus, "--exchange-type", "academy") }, exitMosaic,
			"mosaic: the Academy exchange " + failing.URL + ": "},
		{"academy exchange down", func() ([]string, []string) { return boot(refused, globus, "--exchange-type", "academy") }, exitMosaic,
			"mosaic: the Academy exchange " + refused + ": "},
		{"mosaic exchange down", func() ([]string, []string) { return boot(refused, "mxt_run-token", "--startup-timeout", "3s") }, exitMosaic, "mosaic: "},
		{"agent token for the run's", func() ([]string, []string) { return boot(refused, "mxa_agent-token") }, exitUsage,
			"mosaic: MOSAIC_EXCHANGE_TOKEN holds an agent's token; this command needs the run's token (the launcher keeps it in the run directory's token file)\n"},
		{"Mosaic token for an academy exchange", func() ([]string, []string) { return boot(refused, "mxt_run-token", "--exchange-type", "academy") }, exitUsage,
			"mosaic: MOSAIC_EXCHANGE_TOKEN: this is a Mosaic exchange token, not a Globus access token"},
		{"not an http URL", func() ([]string, []string) { return boot("ftp://x", "mxt_run-token") }, exitUsage,
			"mosaic: exchange URL \"ftp://x\" is not an http(s) URL; check MOSAIC_EXCHANGE_URL\n"},
		{"no exchange URL", func() ([]string, []string) { return []string{"campaign", "bootstrap", camp, "--run-id", "r1"}, nil }, exitUsage,
			"mosaic: no exchange URL: pass --exchange-url, export MOSAIC_EXCHANGE_URL, or set exchange.url in the campaign\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args, vars := c.args()
			_, se, code := runIn(t, e.home, append(append([]string{}, e.vars...), vars...), args...)
			if code != c.code || !strings.Contains(se, c.want) {
				t.Errorf("mosaic %s\nexit %d, stderr:\n%s\nwant exit %d, stderr with %q", strings.Join(args, " "), code, se, c.code, c.want)
			}
			if strings.Contains(se, globus) {
				t.Errorf("stderr shows the bearer token:\n%s", se)
			}
		})
	}
}

// TestAgentRunCampaignFileForms: `agent run` takes the campaign file as its first
// argument as the campaign commands do, the command after --; the flag form with a
// command and no -- keeps working. Each runs the lone agent to its end on a real
// exchange, its exit status mosaic's.
func TestAgentRunCampaignFileForms(t *testing.T) {
	e := newEnv(t)
	solo := filepath.Join(t.TempDir(), "solo.jsonc")
	if err := os.WriteFile(solo, []byte(`{"name":"solo","initial_agent":"a","agents":[{"name":"a","command":["true"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		name   string
		args   []string // then --run-id, --name and --exchange-url, then cmd
		cmd    []string
		code   int
		stdout string
	}{
		{"positional file, command after --", []string{solo}, []string{"--", "sh", "-c", "echo out-line; exit 5"}, 5, "out-line\n"},
		{"--campaign, command without --", []string{"--campaign", solo}, []string{"false"}, 1, ""},
		{"positional file, the campaign's command", []string{solo}, nil, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := fmt.Sprintf("forms-%d", i) // a mailbox closed on exit is not registered again in its run
			url, tok := exchangeServe(t, e, run, solo)
			args := append(append(append([]string{"agent", "run"}, c.args...), "--run-id", run, "--name", "a", "--exchange-url", url), c.cmd...)
			so, se, code := runIn(t, e.home, append(append([]string{}, e.vars...), "MOSAIC_EXCHANGE_TOKEN="+tok), args...)
			if code != c.code || so != c.stdout || !strings.Contains(se, "mosaic-agent a: registered") {
				t.Errorf("mosaic %s\nexit %d stdout %q stderr:\n%s\nwant exit %d stdout %q, registered", strings.Join(args, " "), code, so, se, c.code, c.stdout)
			}
		})
	}
}
