package campaign

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

func TestParseSiteSpecGood(t *testing.T) {
	cases := []struct {
		raw  string
		want SiteSpec
	}{
		{"beta:attach=beta-n1;agents=worker-a,worker-b",
			SiteSpec{Name: "beta", Mode: ModeAttach, Host: "beta-n1", Agents: []string{"worker-a", "worker-b"}}},
		{" aurora : attach = x4708c1s0b0n0 ; agents= a , b ,, ; jobid=8568282.aurora-pbs-0001 ; workdir=/flare/p/u ",
			SiteSpec{Name: "aurora", Mode: ModeAttach, Host: "x4708c1s0b0n0", JobID: "8568282.aurora-pbs-0001", Agents: []string{"a", "b"}, WorkDir: "/flare/p/u"}},
		{"alpha:queue=cpu;walltime=00:30:00",
			SiteSpec{Name: "alpha", Mode: ModeSubmit, Queue: "cpu", Walltime: model.Duration(30 * time.Minute)}},
		{"crux:queue=debug;walltime=1:00:00;nodes=2;account=ChemGraph;agents=w;workdir=/eagle/x;campaign=/eagle/x/c.jsonc;",
			SiteSpec{Name: "crux", Mode: ModeSubmit, Queue: "debug", Walltime: model.Duration(time.Hour), Nodes: 2, Account: "ChemGraph", Agents: []string{"w"}, WorkDir: "/eagle/x", Campaign: "/eagle/x/c.jsonc"}},
		{"auto;agents=a,b", SiteSpec{Mode: ModeAuto, Agents: []string{"a", "b"}}},
		{"delta:auto;agents=a", SiteSpec{Name: "delta", Mode: ModeAuto, Agents: []string{"a"}}},
		{"Delta@NCSA:QUEUE=gpuA100;Walltime=2-00:00:00", SiteSpec{Name: "Delta@NCSA", Mode: ModeSubmit, Queue: "gpuA100", Walltime: model.Duration(48 * time.Hour)}},
	}
	for _, c := range cases {
		got, err := ParseSiteSpec(c.raw)
		if err != nil {
			t.Errorf("%q: %v", c.raw, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", c.raw, got, c.want)
		}
	}
}

func TestParseSiteSpecBad(t *testing.T) {
	cases := []struct{ raw, want string }{
		{"", "empty"},
		{"beta", "missing ':'"},
		{":attach=h;agents=a", "site name"},
		{"be ta:attach=h;agents=a", "site name"},
		{"beta:attach=h", "needs agents"},
		{"beta:jobid=12;agents=a", "jobid= needs attach"},
		{"beta:attach=h;agents=a;queue=cpu", "mixes attach keys"},
		{"beta:attach=h;agents=a;walltime=1:00:00", "mixes attach keys"},
		{"alpha:queue=cpu", "also needs walltime"},
		{"alpha:walltime=1:00:00", "also needs queue"},
		{"alpha:nodes=2", "queue=Q and walltime"},
		{"alpha:agents=a", "cannot tell the mode"},
		{"alpha:", "cannot tell the mode"},
		{"alpha:queue=cpu;walltime=soon", "walltime"},
		{"alpha:queue=cpu;walltime=00:00:00", "walltime"},
		{"alpha:queue=cpu;walltime=1:00:00;nodes=0", "nodes"},
		{"alpha:queue=cpu;walltime=1:00:00;nodes=two", "nodes"},
		{"alpha:queue=c pu;walltime=1:00:00", "queue"},
		{"alpha:queue=cpu;walltime=1:00:00;account=a;b", "not key=value"},
		{"alpha:queue=cpu;walltime=1:00:00;queue=gpu", "given twice"},
		{"alpha:queue=cpu;walltime=1:00:00;color=red", "unknown key"},
		{"alpha:queue=;walltime=1:00:00", "empty value"},
		{"beta:attach=h;agents=,,", "names no agent"},
		{"beta:attach=h;agents=a,-b", "agent name"},
		{"beta:attach=-oProxyCommand=x;agents=a", "not a host"},
		{"beta:attach=h;agents=a;jobid=1;$(x)", "not key=value"},
		{"beta:attach=h;agents=a;jobid=1 2", "not a job id"},
		{"auto;agents=a;queue=cpu", "auto placement takes only"},
		{"auto", "auto placement needs agents"},
		{"beta:attach=h;agents=a;workdir=/x\n/y", "control characters"},
		{strings.Repeat("x", MaxSiteSpecLen+1), "longer than"},
	}
	for _, c := range cases {
		_, err := ParseSiteSpec(c.raw)
		if err == nil {
			t.Errorf("%q: accepted", c.raw)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %q lacks %q", c.raw, err, c.want)
		}
	}
}

// FuzzParseSiteSpec: never panics, and an accepted spec renders to a string
// that parses back to the same spec.
func FuzzParseSiteSpec(f *testing.F) {
	for _, s := range []string{"beta:attach=n1;agents=a,b;jobid=12", "alpha:queue=cpu;walltime=00:30:00;nodes=2;account=x",
		"auto;agents=a", "x:auto", "a:b=c;;", "a:attach=h;agents=a;workdir=/p q"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		sp, err := ParseSiteSpec(raw)
		if err != nil {
			return
		}
		again, err := ParseSiteSpec(sp.String())
		if err != nil {
			t.Fatalf("%q -> %q does not parse: %v", raw, sp.String(), err)
		}
		if !reflect.DeepEqual(sp, again) {
			t.Fatalf("%q -> %q: %+v != %+v", raw, sp.String(), sp, again)
		}
	})
}

func TestResolveSlices(t *testing.T) {
	s, err := Load(exampleDir + "/federated-chat.jsonc")
	if err != nil {
		t.Fatal(err)
	}
	sites := []SiteSpec{{Name: "aurora", Mode: ModeSubmit}, {Name: "crux", Mode: ModeAttach, Agents: []string{"worker-b", "worker-a"}}}
	if err := ResolveSlices(s, sites); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sites[0].Agents, []string{"coordinator"}) || !reflect.DeepEqual(sites[1].Agents, []string{"worker-b", "worker-a"}) {
		t.Errorf("slices: %v %v", sites[0].Agents, sites[1].Agents)
	}
	bad := []struct {
		sites []SiteSpec
		want  string
	}{
		{[]SiteSpec{{Name: "a", Agents: []string{"coordinator", "worker-a"}}}, "no --site runs agent(s) worker-b"},
		{[]SiteSpec{{Name: "a", Agents: []string{"coordinator", "worker-a"}}, {Name: "b", Agents: []string{"worker-a", "worker-b"}}}, "worker-a is placed on both a and b"},
		{[]SiteSpec{{Name: "a", Agents: []string{"coordinator"}}, {Name: "a", Agents: []string{"worker-a", "worker-b"}}}, "site a is given twice"},
		{[]SiteSpec{{Name: "nowhere"}}, "no agent of the campaign has \"site\": \"nowhere\""},
		{[]SiteSpec{{Name: "a", Agents: []string{"coordinator", "ghost", "worker-a", "worker-b"}}}, "agent(s) ghost not declared"},
	}
	for _, c := range bad {
		err := ResolveSlices(s, c.sites)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.sites, err, c.want)
		}
	}
}

// TestResolveSlicesNamesOnlyWhatIsWrong: each mistake gives exactly one message,
// and the agents a site names correctly are never also reported as unplaced.
func TestResolveSlicesNamesOnlyWhatIsWrong(t *testing.T) {
	s, err := Load(exampleDir + "/federated-chat.jsonc")
	if err != nil {
		t.Fatal(err)
	}
	const declared = "(declared: coordinator, worker-a, worker-b)"
	cases := []struct {
		name  string
		sites []SiteSpec
		want  string // the whole error text
	}{
		{"unknown agent", []SiteSpec{{Name: "a", Agents: []string{"coordinator", "nosuch"}}, {Name: "b", Agents: []string{"worker-a", "worker-b"}}},
			`site a: agent(s) nosuch not declared by campaign "federated-chat" ` + declared},
		{"unknown agent, others unplaced", []SiteSpec{{Name: "a", Agents: []string{"coordinator", "nosuch"}}},
			`site a: agent(s) nosuch not declared by campaign "federated-chat" ` + declared + "\n" +
				"no --site runs agent(s) worker-a, worker-b; add them to a site's agents= (their peers would wait for them forever)"},
		{"listed twice", []SiteSpec{{Name: "a", Agents: []string{"coordinator", "coordinator", "worker-a", "worker-b"}}},
			"site a: agent(s) coordinator listed more than once in agents="},
		{"two sites", []SiteSpec{{Name: "a", Agents: []string{"coordinator", "worker-a"}}, {Name: "b", Agents: []string{"worker-a", "worker-b"}}},
			"agent worker-a is placed on both a and b; each agent runs on one site"},
		{"not placed", []SiteSpec{{Name: "a", Agents: []string{"coordinator"}}},
			"no --site runs agent(s) worker-a, worker-b; add them to a site's agents= (their peers would wait for them forever)"},
		{"site twice", []SiteSpec{{Name: "a", Agents: []string{"coordinator"}}, {Name: "a", Agents: []string{"worker-a", "worker-b"}}},
			"site a is given twice; put all of its agents in one --site"},
	}
	for _, c := range cases {
		err := ResolveSlices(s, c.sites)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: error\n%v\nwant\n%s", c.name, err, c.want)
		}
	}
}
