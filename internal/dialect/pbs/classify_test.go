package pbs

import (
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
)

func TestScriptExt(t *testing.T) {
	if got := (&PBS{}).ScriptExt(); got != ".pbs" {
		t.Fatalf("ScriptExt = %q, want .pbs", got)
	}
}

// TestClassify: real qsub/qstat messages (../shared/notes/pbs/qsub-errors.txt, OpenPBS
// pbs_messages.c; the pbs_iff pair as ert's OpenPBS driver tests capture it).
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want dialect.Class
	}{
		{"Connection refused\nqstat: cannot connect to server 6cfab3a0b8ac (errno=15010)", dialect.Transient},
		{"No route to host\nqstat: cannot connect to server aqua (errno=15010)", dialect.Transient},
		{"qsub: cannot connect to server pbspl1 (errno=111)", dialect.Transient},
		{"pbs_iff: cannot connect to host\npbs_iff: all reserved ports in use", dialect.Transient},
		{"qsub: Server not responding", dialect.Transient},
		{"qsub: Resource temporarily unavailable", dialect.Transient},
		{"qsub: Request not allowed: Server shutting down", dialect.Transient},
		{"qsub: Bad UID for job execution", dialect.Permanent},
		{"qsub: Unknown queue", dialect.Permanent},
		{"qsub: Unauthorized Request ", dialect.Permanent},
		{"qsub: Invalid Account", dialect.Permanent},
		{"qsub: Account_Name is required to be set.", dialect.Permanent},
		{"qsub: Job violates queue and/or server resource limits", dialect.Permanent},
		{"qsub: illegal -l value", dialect.Permanent},
		{"ssh: connect to host polaris port 22: Connection timed out", dialect.Transient},
		{"read: Connection reset by peer", dialect.OutcomeUnknown},
		{"", dialect.Permanent},
	} {
		if got := (&PBS{}).Classify(tc.msg); got != tc.want {
			t.Errorf("Classify(%q) = %s, want %s", tc.msg, got, tc.want)
		}
	}
}
