package campaign

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/site"
)

// TestLaunchArgumentErrorsAreArgErrors: every mistake in a launch's arguments
// is an *ArgError (the CLI's exit 2), found before any site is built, with the
// message naming what is wrong; the run directory is not created.
func TestLaunchArgumentErrorsAreArgErrors(t *testing.T) {
	cases := []struct {
		name   string
		change func(o *LaunchOptions)
		want   string
	}{
		{"bad run id", func(o *LaunchOptions) { o.RunID = "a b" }, `run id "a b"`},
		{"no sites", func(o *LaunchOptions) { o.Sites = nil }, "no --site given"},
		{"unknown agent", func(o *LaunchOptions) { o.Sites[1].Agents = []string{"worker-a", "worker-b", "nosuch"} },
			`site crux: agent(s) nosuch not declared by campaign "federated-chat" (declared: coordinator, worker-a, worker-b)`},
		{"agent on two sites", func(o *LaunchOptions) { o.Sites[0].Agents = []string{"coordinator", "worker-a"} },
			"agent worker-a is placed on both aurora and crux"},
		{"not placed", func(o *LaunchOptions) { o.Sites[1].Agents = []string{"worker-a"} }, "no --site runs agent(s) worker-b"},
		{"site twice", func(o *LaunchOptions) {
			o.Sites = append(o.Sites, SiteSpec{Name: "crux", Mode: ModeAttach, Host: "h", Agents: []string{"worker-b"}})
			o.Sites[1].Agents = []string{"worker-a"}
		}, "site crux is given twice"},
		{"not in catalog", func(o *LaunchOptions) { o.Sites[0].Name = "elsewhere"; o.Sites[0].Agents = []string{"coordinator"} },
			"site elsewhere is not in the sites catalog (known: aurora, crux)"},
		{"no catalog", func(o *LaunchOptions) { o.Catalog = nil }, "no sites catalog"},
		{"bad forward name", func(o *LaunchOptions) { o.Forward = map[string]string{"A-B": "x"} }, `--forward-env "A-B"`},
		{"account not the site's", func(o *LaunchOptions) {
			o.Catalog.Systems[0].Accounts = []string{"mine"}
			o.Sites[0].Account = "theirs"
		}, "account theirs is not among the site's accounts (mine)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newLaunchRig(t, func(*scriptedBackend) {})
			r.opts.Catalog = &site.Catalog{Systems: []site.System{{Name: "aurora", Kind: site.KindLocal}, {Name: "crux", Kind: site.KindLocal}}}
			r.opts.Sites[1].Agents = []string{"worker-a", "worker-b"}
			c.change(&r.opts)
			err := Launch(context.Background(), r.opts)
			var ae *ArgError
			if !errors.As(err, &ae) {
				t.Fatalf("error %v (%T), want an *ArgError", err, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q lacks %q", err, c.want)
			}
			if len(r.backends) > 0 {
				t.Errorf("sites were built before the argument error: %v", r.backends)
			}
			if _, err := os.Stat(r.opts.Root + "/" + r.opts.RunID); err == nil {
				t.Error("the run directory was created before the argument error")
			}
		})
	}
	// A failure of the launch itself is not an argument error.
	r := newLaunchRig(t, func(b *scriptedBackend) { b.failStart = true })
	err := Launch(context.Background(), r.opts)
	var ae *ArgError
	if err == nil || errors.As(err, &ae) {
		t.Errorf("a start failure: %v, want a plain error", err)
	}
}

// TestFindRunUnknownAndInvalid: an unknown run says so and where runs live (no
// word of the sites catalog); both it and an invalid id are *ArgError.
func TestFindRunUnknownAndInvalid(t *testing.T) {
	root := t.TempDir()
	for _, c := range []struct{ run, want string }{
		{"nope", "unknown run nope: no run directory " + root + "/nope (launched runs live under " + root + "; list them with `mosaic campaign status`)"},
		{"../x", `run id "../x"`},
	} {
		_, err := FindRun(root, c.run)
		var ae *ArgError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("FindRun(%q): %v, want an *ArgError with %q", c.run, err, c.want)
		}
		for _, f := range []func() error{
			func() error { _, err := RunStatus(context.Background(), root, c.run, nil, nil); return err },
			func() error { return StopRun(context.Background(), root, c.run, nil, nil, os.Stderr, nil) },
		} {
			if err := f(); !errors.As(err, &ae) || strings.Contains(err.Error(), "catalog") {
				t.Errorf("%q: %v, want the FindRun error", c.run, err)
			}
		}
	}
}
