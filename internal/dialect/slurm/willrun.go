package slurm

import (
	"math"
	"time"
)

// WillRunQueueAllowance is the part of Slurm's own start estimate for a new job in
// partition (sbatch --test-only, the will-run test that `sbatch -M` decides on) that
// is Slurm's rough allowance for the queue, and true when the listing lets it be
// worked out; false when it does not (the partition is not listed, or a counted job
// has no time limit or is so large that slurmctld's arithmetic overflows).
//
// slurmctld's job_start_data tests the job against the running jobs only and then
// adds _delayed_job_start_time: the space-time of every pending job of the same
// partition whose priority is at least the new job's (held jobs, priority 0, are not),
// each max(its CPUs, its nodes × the partition's CPUs per node) × its time limit in
// minutes, summed, divided by the partition's CPUs in whole minutes, in seconds. That
// is the same in 22.05 and today's job_scheduler.c. It counts the queue as if it ran
// one job after another over the whole partition, however the jobs really fit: on
// the rig (one 4-GPU node per partition) a 1-GPU job that backfilled at once was
// promised a start 13 minutes away, the sum of the four limits queued in its
// partition, and the same job in another partition of the same node 5 minutes, the
// one limit queued there (docs/PLACEMENT.md, "Slurm's allowance for the queue").
// The queue plan counts the queue itself, so the caller takes this off Slurm's answer
// before it takes the later of that and the plan (the rest of Slurm's answer still
// knows what the plan does not: reservations, features, memory).
//
// The new job's priority is taken as the plan takes it (newJobPriority, less the
// job's nice): the lowest of the user's own queued jobs as submitted, or below every
// queued job when the user has none. A
// job queued to several partitions is counted in its first listed one only
// (slurmctld compares one partition per pending job, and the listing does not say
// which). A listing that hides other users' jobs
// (PrivateData=jobs) counts fewer: the allowance is then smaller than Slurm's and
// Slurm's answer weighs more, never less.
func WillRunQueueAllowance(nodes []NodeLine, jobs []QueuedJob, user, partition string, nice int64) (time.Duration, bool) {
	seen := map[string]bool{}
	var partNodes, partCPUs uint64
	for _, n := range nodes {
		if n.Partition != partition || seen[n.Node] {
			continue
		}
		seen[n.Node] = true
		partNodes++
		partCPUs += uint64(max(n.CPUs, 0))
	}
	if partNodes == 0 || partCPUs == 0 {
		return 0, false
	}
	cpn := uint64(1)
	if partCPUs > partNodes {
		cpn = partCPUs / partNodes
	}
	prio := newJobPriority(jobs, user)
	if prio >= 0 {
		prio -= nice // a job submitted with --nice is tested at its lowered priority
	}
	prio = max(prio, 1)
	var spaceTime uint64 // CPU-minutes
	for i := range jobs {
		j := &jobs[i]
		if j.Running || len(j.Partitions) == 0 || j.Partitions[0] != partition || j.Priority < prio {
			continue
		}
		if j.Limit <= 0 {
			return 0, false // slurmctld multiplies "INFINITE" minutes (overflowing): no sum to undo
		}
		minutes := uint64(j.Limit / time.Minute) // limits are whole minutes in slurmctld
		size := max(uint64(max(j.CPUs, 0)), uint64(j.Nodes)*cpn)
		if size > 0 && minutes > math.MaxUint32/size {
			return 0, false // slurmctld's 32-bit product wraps: no sum to undo
		}
		spaceTime += size * minutes
	}
	mins := spaceTime / partCPUs
	if mins > uint64(planHorizon/time.Minute) {
		return 0, false
	}
	return time.Duration(mins) * time.Minute, true
}
