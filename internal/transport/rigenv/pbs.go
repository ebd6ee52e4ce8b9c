package rigenv

import "testing"

// RequirePBS returns the rig's env when its PBS complex is up (RIG_PBS=1, written by
// scripts/testrig/pbs.sh), skipping the test otherwise (failing under CI=true, where
// the rig always builds PBS).
func RequirePBS(t testing.TB) Env {
	t.Helper()
	env := Require(t)
	if env == nil {
		return nil
	}
	if env["RIG_PBS"] != "1" {
		Missing(t, "the test rig has no PBS complex: run scripts/testrig/up.sh without RIG_PBS=0")
	}
	return env
}
