package globus

import (
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/site"
)

func TestMatchMachine(t *testing.T) {
	ms := site.KnownMachines()
	for host, want := range map[string]string{
		"login.delta.ncsa.illinois.edu":      "delta",
		"dt-login03.delta.ncsa.illinois.edu": "delta",
		"gh-login01.delta.ncsa.illinois.edu": "deltaai",
		"dtai-login.delta.ncsa.illinois.edu": "deltaai",
		"login1.vista.tacc.utexas.edu":       "vista",
		"LOGIN2.FRONTERA.TACC.UTEXAS.EDU.":   "frontera",
		"login3.ls6.tacc.utexas.edu":         "lonestar6",
		"login04.anvil.rcac.purdue.edu":      "anvil",
		"anvil.rcac.purdue.edu":              "anvil",
		"login1.stampede3.tacc.utexas.edu":   "",
		"laptop.local":                       "",
		"":                                   "",
		"utexas.edu":                         "",
		"x.ncsa.illinois.edu":                "",
	} {
		m, ok := MatchMachine(host, ms)
		got := ""
		if ok {
			got = m.Machine
		}
		if got != want {
			t.Errorf("MatchMachine(%q) = %q, want %q", host, got, want)
		}
	}
}

func FuzzMatchMachine(f *testing.F) {
	f.Add("gh-login01.delta.ncsa.illinois.edu")
	f.Add("login1.vista.tacc.utexas.edu")
	ms := site.KnownMachines()
	f.Fuzz(func(t *testing.T, h string) {
		if m, ok := MatchMachine(h, ms); ok && m.Machine == "" {
			t.Fatal("matched a machine without a name")
		}
	})
}
