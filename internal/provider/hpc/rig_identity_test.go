package hpc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/errs"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/transport"
	"github.com/mosaic-hpc/mosaic/internal/transport/rigenv"
)

// TestRigPerUserIdentity: over real ssh to the rig's sshd, a job owned by alice is
// queried under alice's login and key (the rig's second Linux user, mosaicpbs, with
// its own key), one of eve (a key the site does not accept) fails to log in instead
// of falling back to the shared identity, and one of no known owner under the
// system's own (root with the rig key). The ssh config names no key, so only the
// catalog's choice is offered.
func TestRigPerUserIdentity(t *testing.T) {
	env := rigenv.Require(t)
	const second = "mosaicpbs" // made by scripts/testrig/pbs.sh, with /home/mosaicpbs/.ssh/id_ed25519
	aliceKey := "/home/" + second + "/.ssh/id_ed25519"
	if _, err := os.Stat(aliceKey); err != nil {
		rigenv.Missing(t, "the rig's second ssh user "+second+" (scripts/testrig/pbs.sh): "+err.Error())
	}
	rigKey := filepath.Join(env.Get(t, "RIG_DIR"), "ssh", "id_ed25519")
	dir := t.TempDir()
	eveKey := filepath.Join(dir, "eve")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", eveKey).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	known, err := os.ReadFile(filepath.Join(env.Get(t, "RIG_DIR"), "ssh", "known_hosts"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "known_hosts"), known, 0o600)
	cfg := filepath.Join(dir, "ssh_config")
	os.WriteFile(cfg, []byte("Host rig-alpha\n  HostName 127.0.0.1\n  Port "+env.Get(t, "RIG_SSH_PORT_ALPHA")+
		"\nHost *\n  UserKnownHostsFile "+filepath.Join(dir, "known_hosts")+
		"\n  StrictHostKeyChecking accept-new\n  BatchMode yes\n  LogLevel ERROR\n"), 0o600)

	sys := site.System{Name: "alpha@rig", Kind: site.KindSSH, Host: "rig-alpha", User: "root", Dialect: site.DialectSlurm,
		Accounts: []string{env.Get(t, "RIG_ACCOUNT")}, WorkDir: env.Get(t, "RIG_WORKDIR_ALPHA"),
		SSH:   &site.SSH{ConfigFile: cfg, IdentityFile: rigKey},
		Users: []site.UserIdentity{{Name: "alice", User: second, Identity: aliceKey}, {Name: "eve", User: second, Identity: eveKey}}}
	ctl := filepath.Join(os.TempDir(), "mosaic-ssh-idtest")
	p, err := New(sys, WithOwners(owners{jobs: map[string]string{"900000001": "alice", "900000002": "eve"}}))
	if err != nil {
		t.Fatal(err)
	}
	p.tr.(*transport.SSH).ControlDir = ctl
	t.Cleanup(func() { p.Close() })
	ctx := context.Background()

	who := func(owner string) (string, error) {
		q, err := p.ForOwner(owner)
		if err != nil {
			return "", err
		}
		res, err := q.Transport().Run(ctx, []string{"id", "-un"}, nil)
		return strings.TrimSpace(string(res.Stdout)), err
	}
	if u, err := who("alice"); err != nil || u != second {
		t.Fatalf("alice logs in as %q (%v), want %s", u, err, second)
	}
	if u, err := who(""); err != nil || u != "root" {
		t.Fatalf("the shared identity logs in as %q (%v), want root", u, err)
	}
	if _, err := who("eve"); !errors.Is(err, errs.ErrNeedsLogin) && !errors.Is(err, transport.ErrConnection) {
		t.Fatalf("eve's unaccepted key: %v, want a refused login", err)
	}
	// Status of a job of no known owner runs as root (sacct answers: no such job).
	if got, err := p.Status(ctx, []string{"900000003"}); err != nil || len(got) != 0 {
		t.Fatalf("status of an unknown job: %v %v", got, err)
	}
	// Eve's job is never looked up under another identity: her login fails.
	if _, err := p.Status(ctx, []string{"900000002", "900000003"}); err == nil {
		t.Fatal("status of eve's job succeeded under someone else's identity")
	}
	// Alice's job is queried as mosaicpbs: on the rig that user cannot read the
	// cluster's slurm.conf, which is how we see whose login ran sacct.
	_, err = p.Status(ctx, []string{"900000001"})
	if err == nil || !strings.Contains(err.Error(), "Unable to process configuration file") {
		t.Fatalf("status of alice's job: %v, want sacct run as %s (refused slurm.conf)", err, second)
	}
}
