// Package pbs is the PBS Professional / OpenPBS dialect: command builders for qstat,
// pbsnodes, qsub and qdel, and parsers of their `-F json` output that tolerate the
// invalid JSON real PBS versions print (see testdata/README.md for the sources of the
// fixtures). Nothing here runs a process.
package pbs
