package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/academyfake"
	"github.com/mosaic-hpc/mosaic/internal/auth"
	"github.com/mosaic-hpc/mosaic/internal/campaign"
	"github.com/mosaic-hpc/mosaic/internal/globusfake"
)

// TestCampaignOnAcademyExchange: the example campaign on an Academy-protocol
// exchange that wants a Globus bearer (a fake of the hosted one that
// introspects the token at a fake Globus Auth). One site gets the token in a
// 0600 tokens file (as the launcher writes it), the other and the bootstrap
// take it from Mosaic's credential chain (a service identity here); agents
// meet by their deterministic uids, the user task is delivered, the workers
// answer. No token reaches any output or a wrapped command's environment; a
// wrong or missing token is refused with `mosaic login` in the message.
func TestCampaignOnAcademyExchange(t *testing.T) {
	needTool(t, "python3", "apt-get install python3") // the example's coordinator
	g := globusfake.New(t)
	g.AddClient("e2e-service", "e2e-secret")
	x := academyfake.New(t, g, "")
	e := newEnv(t)
	clean := without(e.vars, "MOSAIC_GLOBUS_TOKENS", "GLOBUS_COMPUTE_CLIENT_ID", "GLOBUS_COMPUTE_CLIENT_SECRET",
		"MOSAIC_EXCHANGE_TOKEN", "MOSAIC_EXCHANGE_URL", "MOSAIC_GLOBUS_AUTH_URL")
	clean = append(clean, "MOSAIC_GLOBUS_AUTH_URL="+g.URL)
	vars := append(append([]string(nil), clean...), "GLOBUS_COMPUTE_CLIENT_ID=e2e-service", "GLOBUS_COMPUTE_CLIENT_SECRET=e2e-secret")
	camp := exampleCampaign(t)
	const run = "academy-chat-1"

	// The tokens file of one site, as the launcher writes it (mode 0600).
	c := &auth.Client{BaseURL: g.URL, ClientID: "e2e-service", ClientSecret: "e2e-secret"}
	toks, err := c.ClientCredentials(context.Background(), []string{auth.AcademyExchangeScope})
	if err != nil {
		t.Fatal(err)
	}
	tokFile := filepath.Join(t.TempDir(), "tokens")
	bearer := toks[auth.AcademyExchangeResourceServer].AccessToken
	if err := os.WriteFile(tokFile, []byte(campaign.FormatTokens(campaign.HostedTokens(bearer, []string{"coordinator"}), []string{"coordinator"})), 0o600); err != nil {
		t.Fatal(err)
	}

	start := func(env []string, args ...string) (*exec.Cmd, *syncBuffer) {
		cmd := exec.Command(binary, args...)
		cmd.Env, cmd.Dir = env, e.home
		out := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, out
	}
	ex := []string{"--exchange-type", "academy", "--exchange-url", x.URL}
	a, aOut := start(clean, append([]string{"campaign", "spawn-site", "--campaign", camp, "--run-id", run, "--agents", "coordinator", "--site", "aurora",
		"--startup-timeout", "60s", "--tokens-file", tokFile}, ex...)...)
	b, bOut := start(vars, append([]string{"campaign", "spawn-site", "--campaign", camp, "--run-id", run, "--agents", "worker-a,worker-b", "--site", "crux",
		"--startup-timeout", "60s", "--exchange-type", "http"}, "--exchange-url", x.URL)...)
	boot, bootOut := start(vars, append([]string{"campaign", "bootstrap", "--campaign", camp, "--run-id", run, "--startup-timeout", "60s"}, ex...)...)
	for _, p := range []struct {
		cmd *exec.Cmd
		out *syncBuffer
	}{{boot, bootOut}, {a, aOut}, {b, bOut}} {
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%v: %v\n%s", p.cmd.Args, err, p.out)
			}
		case <-time.After(60 * time.Second):
			_ = p.cmd.Process.Kill()
			t.Fatalf("%v did not finish:\n%s", p.cmd.Args, p.out)
		}
	}
	for _, want := range []string{"registered", "waiting for peers [worker-a worker-b]", "discovered 2 peers", "first message from mosaic", "all 2 peers answered", "mailbox terminated"} {
		if !strings.Contains(aOut.String(), want) {
			t.Errorf("coordinator site output lacks %q:\n%s", want, aOut)
		}
	}
	if !strings.Contains(bootOut.String(), "sent the user task to coordinator") {
		t.Errorf("bootstrap: %s", bootOut)
	}
	// Every request carried a valid bearer; the exchange saw the whole chat
	// between the deterministic mailboxes.
	recs, err := x.Inner.TimelineContext(context.Background(), academyfake.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	from := map[string]int{}
	for _, r := range recs {
		from[r.Src]++
		if r.Dest == "coordinator" && r.DestUID != campaign.AgentUID(run, "coordinator") {
			t.Errorf("message to coordinator at uid %s, want the deterministic %s", r.DestUID, campaign.AgentUID(run, "coordinator"))
		}
	}
	if x.Refused.Load() != 0 || from["mosaic"] != 1 || from["coordinator"] != 2 || from["worker-a"] != 1 || from["worker-b"] != 1 {
		t.Errorf("exchange: %d refused; messages by sender %v, want mosaic 1, coordinator 2, each worker 1", x.Refused.Load(), from)
	}

	// A wrapped command does not get the user's Globus token.
	solo := filepath.Join(t.TempDir(), "solo.jsonc")
	if err := os.WriteFile(solo, []byte(`{"name":"solo","initial_agent":"a","exchange":{"type":"academy"},"agents":[{"name":"a","command":["true"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runIn(t, e.home, vars, "agent", "run", "--campaign", solo, "--run-id", "solo-1", "--name", "a", "--exchange-url", x.URL,
		"--", "sh", "-c", `echo "token=[$MOSAIC_EXCHANGE_TOKEN] url=$MOSAIC_EXCHANGE_URL"`)
	if code != 0 || out != "token=[] url="+x.URL+"\n" || !strings.Contains(errOut, "mosaic-agent a: registered") {
		t.Errorf("agent run on the academy exchange: exit %d, stdout %q, stderr %s", code, out, errOut)
	}

	// A token the exchange refuses (unknown to Globus Auth), and no credential at all.
	_, wrongErr, code := runIn(t, e.home, append(append([]string(nil), clean...), "MOSAIC_EXCHANGE_TOKEN=AgWrongGlobusToken0001"),
		append([]string{"campaign", "bootstrap", "--campaign", camp, "--run-id", run, "--startup-timeout", "2s"}, ex...)...)
	if code == 0 || !strings.Contains(wrongErr, "mosaic login") || !strings.Contains(wrongErr, "HTTP 403") || strings.Contains(wrongErr, "AgWrongGlobusToken0001") {
		t.Errorf("wrong token: exit %d: %s", code, wrongErr)
	}
	_, noneErr, code := runIn(t, e.home, clean, append([]string{"campaign", "spawn-site", "--campaign", camp, "--run-id", run, "--agents", "coordinator"}, ex...)...)
	if code == 0 || !strings.Contains(noneErr, "run `mosaic login`") {
		t.Errorf("no credential: exit %d: %s", code, noneErr)
	}
	_, typeErr, code := runIn(t, e.home, clean, "campaign", "bootstrap", "--campaign", camp, "--run-id", run, "--exchange-type", "globus")
	if code != exitUsage || !strings.Contains(typeErr, "use mosaic") {
		t.Errorf("unknown --exchange-type: exit %d: %s", code, typeErr)
	}

	// No Globus token the fake minted is in any output.
	all := aOut.String() + bOut.String() + bootOut.String() + out + errOut + wrongErr + noneErr
	for _, tok := range g.Minted() {
		if strings.Contains(all, tok) {
			t.Errorf("a Globus token is in the outputs")
		}
	}
}

// TestRigCampaignOnAcademyExchange: `campaign launch --exchange-type academy`
// across the rig's clusters (alpha submits, beta attaches) with the token from
// the launcher's credential chain: every site's agents use it through their
// 0600 tokens file, the run finishes, and the token is in no output, site
// log, job script or run-directory file.
func TestRigCampaignOnAcademyExchange(t *testing.T) {
	r := needRig(t)
	g := globusfake.New(t)
	g.AddClient("e2e-service", "e2e-secret")
	x := academyfake.New(t, g, "")
	e := newEnv(t)
	e.vars = append(without(e.vars, "MOSAIC_GLOBUS_TOKENS", "MOSAIC_EXCHANGE_TOKEN", "MOSAIC_GLOBUS_AUTH_URL", "GLOBUS_COMPUTE_CLIENT_ID", "GLOBUS_COMPUTE_CLIENT_SECRET"),
		"MOSAIC_GLOBUS_AUTH_URL="+g.URL, "GLOBUS_COMPUTE_CLIENT_ID=e2e-service", "GLOBUS_COMPUTE_CLIENT_SECRET=e2e-secret")
	l, run, _, _ := launchAcrossClusters(t, r, e, "academy", "--auto-bootstrap", "--startup-timeout", "120s",
		"--exchange-type", "academy", "--exchange-url", x.URL)
	l.waitFor("all 2 sites ready", 150*time.Second)
	if err := l.wait(120 * time.Second); err != nil {
		t.Fatalf("launch failed: %v\n%s", err, l.output())
	}
	out := l.output()
	t.Logf("launch output:\n%s", out)
	for _, want := range []string{"exchange: Academy exchange " + x.URL, "valid until", "bootstrap: sent the user task to coordinator", "run " + run + " finished"} {
		if !strings.Contains(out, want) {
			t.Errorf("launch output lacks %q:\n%s", want, out)
		}
	}
	recs, err := x.Inner.TimelineContext(context.Background(), academyfake.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, rec := range recs {
		if rec.Run == academyfake.Namespace && (rec.DestUID == campaign.AgentUID(run, rec.Dest) || rec.Dest == "mosaic") {
			n++
		}
	}
	// (the only requests without a bearer: preflight's reachability ping from each login node)
	if x.Forbidden.Load() != 0 || x.Refused.Load() != 2 || n != 5 {
		t.Errorf("exchange: %d refused (%d forbidden), %d messages between the run's mailboxes (want 2, 0, 5): %+v", x.Refused.Load(), x.Forbidden.Load(), n, recs)
	}
	// Where the token may be: each site's tokens file (0600). Nowhere else.
	so, se, code := e.run("campaign", "status", run, "--sites", r.sites(), "--json")
	if code != 0 {
		t.Fatalf("campaign status: %s", se)
	}
	var st struct {
		Sites []struct {
			Name      string `json:"name"`
			RemoteDir string `json:"remote_dir"`
		} `json:"sites"`
	}
	if err := json.Unmarshal([]byte(so), &st); err != nil || len(st.Sites) != 2 {
		t.Fatalf("status: %v %s", err, so)
	}
	dirs := []string{filepath.Join(e.home, "state", "mosaic", "campaigns", run)}
	for _, s := range st.Sites {
		if s.RemoteDir == "" {
			t.Fatalf("site %s has no remote dir: %s", s.Name, so)
		}
		dirs = append(dirs, s.RemoteDir)
	}
	minted := g.Minted()
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, de os.DirEntry, err error) error {
			if err != nil || de.IsDir() {
				return nil
			}
			data, _ := os.ReadFile(p)
			for _, tok := range minted {
				if !strings.Contains(string(data), tok) {
					continue
				}
				if fi, _ := os.Stat(p); filepath.Base(p) != "tokens" || fi.Mode().Perm() != 0o600 {
					t.Errorf("%s holds a Globus token", p)
				}
			}
			return nil
		})
	}
	for _, tok := range minted {
		if strings.Contains(out, tok) {
			t.Error("a Globus token is in the launcher's output")
		}
	}
}
