package model

// JobOutput is where a job writes its stdout and stderr. It is recorded with the
// attempt when the site accepts the job, so its logs can be read after the core
// restarts (a restarted provider no longer holds the job in memory) and after the
// site's catalog entry changes its work directory.
type JobOutput struct {
	// Host is where the files are: the login host of an ssh site, the Globus
	// endpoint, or "localhost" for local and simulated sites.
	Host   string `json:"host,omitempty"`
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
}
