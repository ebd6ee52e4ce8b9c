package model

import "strconv"

// The one rendering of a job's size, used by the decision rationale, dispatch events,
// `mosaic tasks` and the API's task summaries.

// AppendSize appends the size for people — "2 nodes, 8× A100, 128 cores, 256 GB/node,
// 12h" — to buf: GPUs only when there are any (with the model when known), memory only
// when set. Built with appends: a placement's rationale renders it for every decision.
func (j *JobSpec) AppendSize(buf []byte) []byte {
	buf = strconv.AppendInt(buf, int64(j.Nodes), 10)
	buf = append(buf, " node"...)
	if j.Nodes != 1 {
		buf = append(buf, 's')
	}
	if j.GPUs > 0 {
		buf = append(buf, ", "...)
		buf = strconv.AppendInt(buf, int64(j.GPUs), 10)
		if j.GPUModel != "" {
			buf = append(buf, "× "...)
			buf = append(buf, j.GPUModel...)
		} else {
			buf = append(buf, " GPU"...)
			if j.GPUs != 1 {
				buf = append(buf, 's')
			}
		}
	}
	buf = append(buf, ", "...)
	cores := j.TotalCores()
	buf = strconv.AppendInt(buf, int64(cores), 10)
	buf = append(buf, " core"...)
	if cores != 1 {
		buf = append(buf, 's')
	}
	if j.MemoryGB > 0 {
		buf = append(buf, ", "...)
		buf = strconv.AppendInt(buf, int64(j.MemoryGB), 10)
		buf = append(buf, " GB/node"...)
	}
	buf = append(buf, ", "...)
	return append(buf, j.Walltime.String()...)
}

// Size is AppendSize as a string.
func (j *JobSpec) Size() string { return string(j.AppendSize(make([]byte, 0, 64))) }

// SizeCompact is the size for a table column: "2n 8g 128c 12:00:00" (walltime as
// Slurm writes it).
func (j *JobSpec) SizeCompact() string {
	buf := strconv.AppendInt(make([]byte, 0, 32), int64(j.Nodes), 10)
	buf = append(buf, "n "...)
	if j.GPUs > 0 {
		buf = strconv.AppendInt(buf, int64(j.GPUs), 10)
		buf = append(buf, "g "...)
	}
	buf = strconv.AppendInt(buf, int64(j.TotalCores()), 10)
	buf = append(buf, "c "...)
	return string(append(buf, j.Walltime.Slurm()...))
}
