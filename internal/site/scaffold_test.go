package site

import (
	"strings"
	"testing"
)

func TestScaffoldParsesBack(t *testing.T) {
	var es []ScaffoldEntry
	for _, a := range []string{"delta=alice@dt-login03.delta.ncsa.illinois.edu", "anvil", "vista=vista-alias"} {
		e, err := ParseScaffoldArg(a)
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	out, err := Scaffold(es)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := Parse("sites.yaml", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(cat.Systems) != 3 || cat.Systems[0].Host != "dt-login03.delta.ncsa.illinois.edu" || cat.Systems[0].User != "alice" ||
		cat.Systems[1].Host != "anvil.rcac.purdue.edu" || len(cat.Systems[2].Partitions) == 0 {
		t.Fatalf("%+v", cat.Systems)
	}
	warned := strings.Join(cat.Warnings, "\n")
	if !strings.Contains(warned, Placeholder) && !strings.Contains(strings.ToLower(warned), "todo") {
		t.Fatalf("placeholders must warn: %q", warned)
	}
}

func TestScaffoldErrors(t *testing.T) {
	if _, err := ParseScaffoldArg("summit"); err == nil || !strings.Contains(err.Error(), "known") {
		t.Fatalf("unknown machine: %v", err)
	}
	if _, err := Scaffold(nil); err == nil {
		t.Fatal("no machines must be an error")
	}
	e, _ := ParseScaffoldArg("delta")
	if _, err := Scaffold([]ScaffoldEntry{e, e}); err == nil {
		t.Fatal("a machine twice must be an error")
	}
}
