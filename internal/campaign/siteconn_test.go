package campaign

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/provider/hpc"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/transport"
)

// TestSiteConnSharesTheProvidersTransport: a campaign site and the hpc provider built
// from the same catalog system reach it the same way: the same ssh command line
// (options, identity, jump host, config file, control path), and the same login name.
func TestSiteConnSharesTheProvidersTransport(t *testing.T) {
	sys := site.System{Name: "delta", Kind: site.KindSSH, Host: "login.delta.example", User: "alice", Dialect: site.DialectSlurm,
		SSH: &site.SSH{Port: 2222, IdentityFile: "/home/alice/.ssh/id_delta", ProxyJump: "bastion", ConfigFile: "/home/alice/.ssh/cfg",
			ConnectTimeout: "7s", Options: []string{"StrictHostKeyChecking=yes"}}}
	conn, err := newSiteConn(sys, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := hpc.New(sys)
	if err != nil {
		t.Fatal(err)
	}
	ps, ok := p.Transport().(*transport.SSH)
	if !ok || conn.ssh == nil {
		t.Fatalf("provider transport %T, campaign ssh %v", p.Transport(), conn.ssh)
	}
	argv := []string{"sbatch", "--parsable", "/w/x.sbatch"}
	want, err := ps.Args(argv)
	if err != nil {
		t.Fatal(err)
	}
	got, err := conn.ssh.Args(argv)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("campaign ssh command\n  %q\nprovider ssh command\n  %q", got, want)
	}
	for _, w := range []string{"-i /home/alice/.ssh/id_delta", "-J bastion", "-F /home/alice/.ssh/cfg", "-p 2222", "-l alice",
		"StrictHostKeyChecking=yes", "ConnectTimeout=7", "ControlPath="} {
		if !strings.Contains(strings.Join(got, " "), w) {
			t.Errorf("ssh command lacks %q: %q", w, got)
		}
	}
	if conn.login() != p.Endpoint() || conn.login() != "alice@login.delta.example" {
		t.Errorf("campaign login %q, provider endpoint %q", conn.login(), p.Endpoint())
	}
}

func TestSiteConnLocalKeepsItsEnv(t *testing.T) {
	sys := site.System{Name: "here", Kind: site.KindLocal}
	conn, err := newSiteConn(sys, []string{"SLURM_CONF=/etc/rig/slurm.conf"})
	if err != nil {
		t.Fatal(err)
	}
	l, ok := conn.tr.(*transport.Local)
	if !ok || !slices.Contains(l.Env, "SLURM_CONF=/etc/rig/slurm.conf") || conn.ssh != nil || conn.login() != "localhost" {
		t.Fatalf("local conn %+v (%T)", conn, conn.tr)
	}
	p, err := hpc.New(sys, hpc.WithLocalEnv("SLURM_CONF=/etc/rig/slurm.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if pl := p.Transport().(*transport.Local); !slices.Equal(pl.Env, l.Env) {
		t.Fatalf("provider env %q, campaign env %q", pl.Env, l.Env)
	}
}

func TestSiteConnRefusesGlobus(t *testing.T) {
	_, err := newSiteConn(site.System{Name: "g", Kind: site.KindGlobus, Endpoint: "4b116d3c-1703-4f8f-9f6f-39921e5864df"}, nil)
	if err == nil || !strings.Contains(err.Error(), "campaigns launch on kind ssh or local") {
		t.Fatalf("globus site accepted for a campaign: %v", err)
	}
}
