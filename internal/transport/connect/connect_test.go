package connect

import (
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/transport"
	"github.com/mosaic-hpc/mosaic/internal/transport/globus"
)

const ep = "4b116d3c-1703-4f8f-9f6f-39921e5864df"

func TestNewSSH(t *testing.T) {
	sys := site.System{Name: "d", Kind: site.KindSSH, Host: "h", User: "u",
		SSH: &site.SSH{Port: 2222, IdentityFile: "/k", ProxyJump: "j", ConfigFile: "/c", ConnectTimeout: "7s", Options: []string{"A=b"}}}
	tr, err := New(sys, Options{Limits: transport.Limits{Timeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	s := tr.(*transport.SSH)
	if s.Host != "h" || s.User != "u" || s.Port != 2222 || s.IdentityFile != "/k" || s.ProxyJump != "j" || s.ConfigFile != "/c" ||
		s.ConnectTimeout != 7*time.Second || len(s.Options) != 1 || s.Timeout != time.Minute {
		t.Fatalf("%+v", s)
	}
	if Endpoint(sys) != "u@h" {
		t.Fatalf("endpoint %q", Endpoint(sys))
	}
}

func TestNewLocalCopiesEnv(t *testing.T) {
	env := []string{"SLURM_CONF=/a"}
	tr, err := New(site.System{Name: "l", Kind: site.KindLocal}, Options{LocalEnv: env})
	if err != nil {
		t.Fatal(err)
	}
	l := tr.(*transport.Local)
	l.Env[0] = "X=changed"
	if env[0] != "SLURM_CONF=/a" {
		t.Fatal("the transport shares the caller's env slice")
	}
}

func TestNewGlobusUsesTheCallersClientAndBreakers(t *testing.T) {
	sys := site.System{Name: "g", Kind: site.KindGlobus, Endpoint: ep}
	if _, err := New(sys, Options{}); err == nil || !strings.Contains(err.Error(), "Globus Compute client") {
		t.Fatalf("kind globus without a client: %v", err)
	}
	c := &globus.Client{BaseURL: "http://127.0.0.1:1"}
	bs := &globus.Breakers{}
	tr, err := New(sys, Options{Globus: c, Breakers: bs})
	if err != nil {
		t.Fatal(err)
	}
	g := tr.(*globus.Transport)
	if g.Client != c || g.Breaker != bs.For(ep) || g.Endpoint != ep {
		t.Fatalf("%+v", g)
	}
	if _, err := New(site.System{Name: "g", Kind: site.KindGlobus, Endpoint: "delta"}, Options{Globus: c}); err == nil ||
		!strings.Contains(err.Error(), "mosaic endpoints") {
		t.Fatalf("bad endpoint: %v", err)
	}
}

func TestNewRefusesOtherKinds(t *testing.T) {
	for _, sys := range []site.System{{Name: "a", Kind: site.KindSSH}, {Name: "b", Kind: site.KindSim}, {Name: "c", Kind: "slurmrest"}} {
		if _, err := New(sys, Options{}); err == nil {
			t.Errorf("%+v: want error", sys)
		}
	}
}

// TestCatalogAcceptsEveryKind: the catalog's validation (internal/site, below this
// package, keeps its own list of kinds) accepts every kind New builds.
func TestCatalogAcceptsEveryKind(t *testing.T) {
	for _, k := range Kinds() {
		yaml := "systems:\n  - name: X\n    kind: " + k + "\n    host: h\n    endpoint: " + ep + "\n    accounts: [a]\n    workdir: /w\n"
		if k != site.KindSSH {
			yaml = strings.Replace(yaml, "    host: h\n", "", 1)
		}
		if k != site.KindGlobus {
			yaml = strings.Replace(yaml, "    endpoint: "+ep+"\n", "", 1)
		}
		if _, err := site.Parse("sites.yaml", []byte(yaml)); err != nil {
			t.Errorf("kind %s: the catalog refuses it: %v (add it to internal/site/validate.go's kinds)", k, err)
		}
		if !Supports(k) {
			t.Errorf("Supports(%s) = false", k)
		}
	}
	if Supports(site.KindSim) || Supports("slurmrest") {
		t.Fatal("Supports accepts a kind New does not build")
	}
}
