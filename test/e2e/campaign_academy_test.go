package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// academyCampaign is examples/campaigns/academy-chat.jsonc: a Python agent
// written against the Academy wire format with the standard library only
// (academy_planner.py: registers under its deterministic uid, listens over SSE,
// answers pings, runs receive_message) as the initial agent, and calculator.py,
// wrapped by mosaic, serving "add" and "echo" through fd 3.
func academyCampaign(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	p, err := filepath.Abs(filepath.Join(filepath.Dir(file), "..", "..", "examples", "campaigns", "academy-chat.jsonc"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRigCampaignAcademyAgent is issue 17's first "Done means": `campaign
// launch` runs the Python Academy-protocol agent and the Mosaic-wrapped agent
// as two slices on two kind-local sites (each attached to the rig's beta
// allocation by srun --overlap); the bootstrap reaches the Python agent as an
// action request; it calls add/echo on the wrapped agent and checks the
// results (and that an undeclared action is refused), answers the bootstrap,
// shuts the wrapped agent down with a shutdown-request and exits; the run
// finishes and its timeline tags messages with both sites. The site names
// (east, west) are not the campaign's hints: the tags come from the launch.
func TestRigCampaignAcademyAgent(t *testing.T) {
	needTool(t, "python3", "apt-get install python3")
	r := needRig(t)
	e := newEnv(t)
	job, node := r.allocation(t)
	var cat strings.Builder
	cat.WriteString("systems:\n")
	for _, s := range []string{"east", "west"} {
		fmt.Fprintf(&cat, "  - name: %s\n    kind: local\n    dialect: slurm\n    accounts: [%s]\n    workdir: %s\n", s, r.env.Get(t, "RIG_ACCOUNT"), t.TempDir())
	}
	sites := filepath.Join(t.TempDir(), "sites.yaml")
	if err := os.WriteFile(sites, []byte(cat.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	// Kind-local sites run srun here, against the rig's beta cluster.
	e.vars = append(e.vars, "SLURM_CONF="+r.env.Get(t, "SLURM_CONF_BETA"))
	run := fmt.Sprintf("e2e-acad-%d", rand.IntN(1e9))
	start := time.Now()
	l := startLaunch(t, e, "--campaign", academyCampaign(t), "--run-id", run, "--sites", sites, "--mosaic-bin", binary,
		"--site", "east:attach="+node+";jobid="+job+";agents=planner",
		"--site", "west:attach="+node+";jobid="+job+";agents=calculator",
		"--auto-bootstrap", "--startup-timeout", "60s")
	if err := l.wait(120 * time.Second); err != nil {
		t.Fatalf("launch: %v\n%s", err, l.output())
	}
	out := l.output()
	t.Logf("launch took %s:\n%s", time.Since(start).Round(time.Millisecond), out)
	for _, want := range []string{
		"all 2 sites ready",
		"bootstrap: sent the user task to Academy agent planner as action receive_message",
		`bootstrap: planner answered: {"task": "Add 2 and 3, then report.", "sum": 5, "echo": {"args": ["hello"], "kwargs": {"n": 1}}}`,
		"east: slice finished (succeeded)",
		"west: slice finished (succeeded)",
		"run " + run + " finished",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("launch output lacks %q:\n%s", want, out)
		}
	}
	// The agents' own view, from the site logs.
	so, se, code := e.run("campaign", "status", run, "--sites", sites, "--json")
	if code != 0 {
		t.Fatalf("campaign status: exit %d\n%s%s", code, so, se)
	}
	var st struct {
		State string `json:"state"`
		Sites []struct {
			Name  string `json:"name"`
			State string `json:"state"`
			Log   string `json:"log"`
		} `json:"sites"`
	}
	if err := json.Unmarshal([]byte(so), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, so)
	}
	if st.State != "finished" || len(st.Sites) != 2 {
		t.Fatalf("status: %s", so)
	}
	logs := map[string]string{}
	for _, s := range st.Sites {
		b, err := os.ReadFile(s.Log)
		if err != nil {
			t.Fatalf("site %s log: %v", s.Name, err)
		}
		logs[s.Name] = string(b)
		t.Logf("site %s log:\n%s", s.Name, b)
		if s.State != "succeeded" {
			t.Errorf("site %s: state %s", s.Name, s.State)
		}
	}
	for site, wants := range map[string][]string{
		"east": {"started Academy agent python3 academy_planner.py", "registered by the agent", "planner: calculator says 2 + 3 = 5",
			`planner: mul refused: agent calculator has no action "mul"; its actions are: add, echo`, "planner: done; asked calculator to shut down",
			// Like Academy's runtime the planner terminates its own mailbox; the wrapper sees it did.
			"planner: mailbox terminated", "exited with status 0", "mailbox terminated by the agent"},
		"west": {"serves actions [add echo]", "calculator: answered add from planner", "calculator: answered echo from planner",
			"shutdown requested by planner (terminate: true)", "mailbox terminated"},
	} {
		for _, w := range wants {
			if !strings.Contains(logs[site], w) {
				t.Errorf("site %s log lacks %q:\n%s", site, w, logs[site])
			}
		}
	}
	// The timeline: the bootstrap action request, the planner's calls to the
	// calculator (east -> west) and their answers (west -> east).
	data, err := os.ReadFile(filepath.Join(e.home, "state", "mosaic", "campaigns", run, "timeline.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tl []struct {
		Src      string `json:"src"`
		Dest     string `json:"dest"`
		SrcSite  string `json:"src_site"`
		DestSite string `json:"dest_site"`
		Kind     string `json:"kind"`
	}
	if err := json.Unmarshal(data, &tl); err != nil {
		t.Fatalf("timeline.json: %v\n%s", err, data)
	}
	var seen []string
	for _, m := range tl {
		seen = append(seen, fmt.Sprintf("%s@%s->%s@%s:%s", m.Src, m.SrcSite, m.Dest, m.DestSite, m.Kind))
	}
	all := strings.Join(seen, "\n")
	for _, want := range []string{
		"mosaic@->planner@east:action-request",
		"planner@east->calculator@west:action-request",
		"calculator@west->planner@east:action-response",
		"calculator@west->planner@east:user-error-response",
		"planner@east->mosaic@:action-response",
		"planner@east->calculator@west:shutdown-request",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("timeline lacks %s:\n%s", want, all)
		}
	}
}
