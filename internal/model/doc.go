// Package model holds Mosaic's domain types: what a probe sees (ResourceRecord,
// ResourceSnapshot), what a task asks for (Envelope, Task), what a site runs (JobSpec,
// JobStatus, Attempt) and what happened (Event). It imports nothing of Mosaic's own.
package model
