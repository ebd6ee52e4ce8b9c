package pbs

import "github.com/mosaic-hpc/mosaic/internal/dialect"

// ScriptExt is ".pbs".
func (p *PBS) ScriptExt() string { return ".pbs" }

// Classify judges a failed PBS command's message. The server being unreachable is
// transient: "qsub: cannot connect to server <host> (errno=15010)", usually after
// "Connection refused" or "No route to host" (OpenPBS qsub.c; real captures in
// ../shared/notes/pbs/qsub-errors.txt section 2d), and pbs_iff failing to reach the
// server ("pbs_iff: cannot connect to host", "pbs_iff: all reserved ports in use",
// "Server not responding"), as is PBSE_RESCUNAV "Resource temporarily unavailable"
// and PBSE_SVRDOWN "Request not allowed: Server shutting down". A timeout after the
// request was sent may have queued the job. Server refusals ("Bad UID for job
// execution", "Unknown queue", "Invalid Account", hook texts) are permanent.
func (p *PBS) Classify(msg string) dialect.Class {
	switch {
	case dialect.ContainsAny(msg, "cannot connect to server", "pbs_iff: cannot connect to host", "all reserved ports in use",
		"server not responding", "server shutting down", "resource temporarily unavailable", "invalid credential"):
		return dialect.Transient
	}
	c, _ := dialect.ClassifyCommon(msg)
	return c
}
