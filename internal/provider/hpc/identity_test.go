package hpc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/transport"
)

// owners is an OwnerLookup over fixed maps (the core's is its store).
type owners struct{ jobs, tags map[string]string }

func (o owners) JobOwners(_ context.Context, _ string, ids []string) (map[string]string, error) {
	out := map[string]string{}
	for _, id := range ids {
		if v, ok := o.jobs[id]; ok {
			out[id] = v
		}
	}
	return out, nil
}

func (o owners) TagOwners(_ context.Context, tags []string) (map[string]string, error) {
	out := map[string]string{}
	for _, t := range tags {
		if v, ok := o.tags[t]; ok {
			out[t] = v
		}
	}
	return out, nil
}

func usersSystem() site.System {
	return site.System{Name: "alpha", Kind: site.KindSSH, Host: "login.example", User: "svc", Dialect: site.DialectSlurm,
		Accounts: []string{"shared"}, SSH: &site.SSH{IdentityFile: "/keys/svc"},
		Users: []site.UserIdentity{{Name: "alice", User: "al", Identity: "/keys/alice", Account: "proj-a"}}}
}

// TestPerUserSSHCommandLine: alice's provider logs in as her login with her key,
// through a control master of her own; the shared one keeps the system's; a user the
// catalog gives no identity is refused.
func TestPerUserSSHCommandLine(t *testing.T) {
	ctl := t.TempDir()
	if err := os.Chmod(ctl, 0o700); err != nil {
		t.Fatal(err)
	}
	sys := usersSystem()
	key := filepath.Join(t.TempDir(), "alice")
	if err := os.WriteFile(key, []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	sys.Users[0].Identity = key
	p, err := New(sys, WithOwners(owners{}))
	if err != nil {
		t.Fatal(err)
	}
	p.tr.(*transport.SSH).ControlDir = ctl
	q, err := p.ForOwner("alice")
	if err != nil {
		t.Fatal(err)
	}
	if q == p || q.Identity() != "al@login.example" || p.Identity() != "svc@login.example" {
		t.Fatalf("identities %q / %q", q.Identity(), p.Identity())
	}
	qa, err := q.tr.(*transport.SSH).Args([]string{"squeue"})
	if err != nil {
		t.Fatal(err)
	}
	pa, err := p.tr.(*transport.SSH).Args([]string{"squeue"})
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(qa, " ")
	if !strings.Contains(line, "-i "+key+" -o IdentitiesOnly=yes -o IdentityAgent=none") || !strings.Contains(line, "-l al") || strings.Contains(line, "/keys/svc") {
		t.Fatalf("alice's ssh line: %s", line)
	}
	if !strings.Contains(strings.Join(pa, " "), "-i /keys/svc -l svc") || strings.Contains(strings.Join(pa, " "), "IdentitiesOnly") {
		t.Fatalf("shared ssh line: %v", pa)
	}
	if cp := controlPath(qa); cp == controlPath(pa) || !strings.Contains(cp, "u-alice") {
		t.Fatalf("alice shares the control path %q with the system (%q)", cp, controlPath(pa))
	}
	if q2, _ := p.ForOwner("alice"); q2 != q {
		t.Fatal("alice's provider is built again")
	}
	if q.userAccount("shared") != "proj-a" || q.userAccount("proj-a") != "proj-a" || p.userAccount("shared") != "shared" {
		t.Fatal("account substitution")
	}
	for _, u := range []string{"", "local"} {
		if s, err := p.ForOwner(u); err != nil || s != p {
			t.Fatalf("%q: %v", u, err)
		}
	}
	if _, err := p.ForOwner("mallory"); !errors.Is(err, site.ErrNoIdentity) {
		t.Fatalf("mallory: %v, want ErrNoIdentity", err)
	}
	// A per-user key that is not there is refused, naming it, not replaced by another.
	sys.Users = append(sys.Users, site.UserIdentity{Name: "dan", User: "dan", Identity: filepath.Join(t.TempDir(), "gone")})
	p2, err := New(sys, WithOwners(owners{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p2.ForOwner("dan"); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("dan's missing key: %v, want a refusal naming it", err)
	}
}

func controlPath(args []string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "ControlPath="); ok {
			return v
		}
	}
	return ""
}

// localUsersProvider is a kind-local Slurm system whose users: list alice only, with
// job 1 alice's and job 2 bob's, over stand-ins for the Slurm commands that record who
// ran them in the returned log (MOSAIC_AS is in each provider's transport environment).
func localUsersProvider(t *testing.T) (*Provider, string) {
	t.Helper()
	bin := t.TempDir()
	log := filepath.Join(bin, "calls")
	script := "#!/bin/sh\necho \"$MOSAIC_AS $0 $*\" >> " + log + "\n"
	for _, n := range []string{"sacct", "squeue", "scancel"} {
		if err := os.WriteFile(filepath.Join(bin, n), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sys := site.System{Name: "loc", Kind: site.KindLocal, Dialect: site.DialectSlurm, Accounts: []string{"shared"},
		Users: []site.UserIdentity{{Name: "alice", Account: "proj-a"}}}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	p, err := New(sys, WithOwners(owners{jobs: map[string]string{"1": "alice", "2": "bob"}}), WithLocalEnv("MOSAIC_AS=shared"))
	if err != nil {
		t.Fatal(err)
	}
	q, err := p.ForOwner("alice")
	if err != nil {
		t.Fatal(err)
	}
	q.tr.(*transport.Local).Env = append(slices.Clone(q.tr.(*transport.Local).Env), "MOSAIC_AS=alice")
	return p, log
}

// TestPerUserRoutingLocal: on a kind-local system each call about a job goes through
// its owner's provider: a job of a user without an identity is refused, not queried
// under the shared one; with no users: nothing is routed.
func TestPerUserRoutingLocal(t *testing.T) {
	p, log := localUsersProvider(t)
	if err := p.Cancel(context.Background(), []string{"1", "3"}); err != nil {
		t.Fatal(err)
	}
	if err := p.Cancel(context.Background(), []string{"2"}); !errors.Is(err, site.ErrNoIdentity) {
		t.Fatalf("bob's job: %v, want ErrNoIdentity", err)
	}
	b, _ := os.ReadFile(log)
	got := strings.TrimSpace(string(b))
	lines := strings.Split(got, "\n")
	slices.Sort(lines)
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "alice ") || !strings.HasSuffix(lines[0], " 1") ||
		!strings.HasPrefix(lines[1], "shared ") || !strings.HasSuffix(lines[1], " 3") {
		t.Fatalf("calls:\n%s", got)
	}
}

// TestMixedOwnerBatch: one job whose owner has no identity does not stop the batch:
// a cancel of alice's, bob's (no identity) and an unowned job cancels alice's and the
// unowned one and reports bob's in a PartialError; a status query does the same.
func TestMixedOwnerBatch(t *testing.T) {
	p, log := localUsersProvider(t)
	err := p.Cancel(context.Background(), []string{"1", "2", "3"})
	failed, partial := provider.Partial(err)
	if !partial || len(failed) != 1 || !errors.Is(failed["2"], site.ErrNoIdentity) || !strings.Contains(err.Error(), "2") {
		t.Fatalf("mixed cancel: %v, want a PartialError naming bob's job 2 only", err)
	}
	b, _ := os.ReadFile(log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	slices.Sort(lines)
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "alice ") || !strings.HasSuffix(lines[0], " 1") ||
		!strings.HasPrefix(lines[1], "shared ") || !strings.HasSuffix(lines[1], " 3") {
		t.Fatalf("calls:\n%s", b)
	}
	os.Remove(log)
	res, err := p.Status(context.Background(), []string{"1", "2", "3"})
	if failed, partial := provider.Partial(err); !partial || len(failed) != 1 || failed["2"] == nil || res == nil {
		t.Fatalf("mixed status: %v %v, want an answer and a PartialError naming job 2", res, err)
	}
	b, _ = os.ReadFile(log)
	if strings.Contains(string(b), ",2") || strings.Contains(string(b), " 2\n") {
		t.Fatalf("bob's job was asked about under another identity:\n%s", b)
	}
	if !strings.Contains(string(b), "alice ") || !strings.Contains(string(b), "shared ") {
		t.Fatalf("the routable jobs were not asked about:\n%s", b)
	}
}

// TestEstimatesRunAsTheOwner: start estimates (sbatch --test-only) run under the task
// owner's identity and charge their account, single or batched; an owner without an
// identity is refused (that spec's error), never estimated under the shared login.
func TestEstimatesRunAsTheOwner(t *testing.T) {
	bin := t.TempDir()
	log := filepath.Join(bin, "calls")
	// A stand-in sbatch --test-only: records who ran it and the script's account.
	script := "#!/bin/sh\nf=\"$2\"\nacct=$(grep -o 'account=[a-z-]*' \"$f\" | head -1)\necho \"$MOSAIC_AS $acct\" >> " + log +
		"\necho 'sbatch: Job 4 to start at 2030-01-02T03:04:05 using 1 processors on nodes n1 in partition cpu' >&2\n"
	if err := os.WriteFile(filepath.Join(bin, "sbatch"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	sys := site.System{Name: "loc", Kind: site.KindLocal, Dialect: site.DialectSlurm, Accounts: []string{"shared"}, WorkDir: t.TempDir(),
		Users: []site.UserIdentity{{Name: "alice", Account: "proj-a"}}}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	p, err := New(sys, WithOwners(owners{}), WithLocalEnv("MOSAIC_AS=shared"))
	if err != nil {
		t.Fatal(err)
	}
	q, err := p.ForOwner("alice")
	if err != nil {
		t.Fatal(err)
	}
	q.tr.(*transport.Local).Env = append(slices.Clone(q.tr.(*transport.Local).Env), "MOSAIC_AS=alice")
	spec := func(owner string) model.JobSpec {
		return model.JobSpec{Tag: "mosaic-t-1", Name: "t", System: "loc", Partition: "cpu", Account: "shared", Nodes: 1, NTasks: 1,
			CPUsPerTask: 1, Walltime: model.Duration(time.Minute), Command: "true", Owner: owner}
	}
	if _, err := p.EstimateStart(context.Background(), spec("alice")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.EstimateStart(context.Background(), spec("bob")); !errors.Is(err, site.ErrNoIdentity) {
		t.Fatalf("bob's estimate: %v, want ErrNoIdentity", err)
	}
	res, err := p.EstimateStarts(context.Background(), []model.JobSpec{spec("alice"), spec("bob"), spec("")})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err != nil || res[2].Err != nil || !errors.Is(res[1].Err, site.ErrNoIdentity) {
		t.Fatalf("batched estimates: %+v, want alice's and the unowned one, bob's refused", res)
	}
	b, _ := os.ReadFile(log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	slices.Sort(lines)
	want := []string{"alice account=proj-a", "alice account=proj-a", "shared account=shared"}
	if !slices.Equal(lines, want) {
		t.Fatalf("estimates ran as:\n%s\nwant %v", b, want)
	}
}
