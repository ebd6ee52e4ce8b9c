package slurm

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// Predicted runtimes.
//
// Jobs end well before their time limits: users ask generously, since a job that
// reaches its limit is killed. A plan on the limits (what Slurm's will-run test and
// backfill do) is therefore pessimistic by a factor that is the user's own habit, and
// that habit is in the accounting: for each of the user's recent finished jobs, its
// elapsed time against its limit. Runtimes predicts a job of the user's from the same
// user's recent jobs that asked for the same limit: the median of their ratios of
// elapsed to limit, times the limit. Predicting from the user's own recent jobs is
// Tsafrir, Etsion and Feitelson's ("Backfilling using system-generated predictions
// rather than user runtime estimates", IEEE TPDS 2007); grouping them by what they
// ask (here the limit) is Smith, Foster and Taylor's templates ("Predicting
// application run times using historical information", JSSPP 1998). The same limit
// is what keeps a user's quick test jobs from predicting their long runs: a limit
// with fewer than RuntimeMinSamples recent jobs is not predicted. Only the user's own
// jobs are: other users' accounting is private on most sites, and their jobs keep
// their limits.

// RuntimeHistoryCommand lists the site user's finished allocations of the last two
// days that ran to an end of their own (completed, failed, timed out, out of memory;
// not cancelled: a cancelled queued job never ran) with their elapsed time and limit.
// The user is named (sacct run by root would otherwise list every user's jobs).
func RuntimeHistoryCommand() []string {
	return []string{"sh", "-c", `exec sacct --allocations --parsable2 --noheader --starttime=now-2days --endtime=now ` +
		`--state=COMPLETED,FAILED,TIMEOUT,OUT_OF_MEMORY --user="$(id -un)" --format=` + runtimeFormat}
}

const (
	runtimeFormat = "JobIDRaw,Elapsed,Timelimit"
	runtimeFields = 3
)

// RanJob is one of the user's finished jobs: how long it ran of how long it asked.
type RanJob struct {
	ID      string
	Elapsed time.Duration
	Limit   time.Duration // 0: unlimited, the partition's limit, or not yet stored (no ratio)
}

// ParseRuntimeHistory reads RuntimeHistoryCommand's output. An empty limit (slurmdbd
// lists a short job without it for a few seconds after it ends) is no limit. A malformed line is an
// error naming it; when cut is set (the listing was cut at the output cap), the last
// line, which may be cut mid-way, is dropped instead.
func ParseRuntimeHistory(out []byte, cut bool) ([]RanJob, error) {
	ls := lines(out)
	if cut && len(ls) > 0 {
		ls = ls[:len(ls)-1]
	}
	res := make([]RanJob, 0, len(ls))
	for n, l := range ls {
		f, ok := splitDelimited(l, runtimeFields, -1)
		if !ok {
			return nil, fmt.Errorf("sacct line %d: want %d '|'-separated fields (%s), got %q", n+1, runtimeFields, runtimeFormat, truncate(l))
		}
		id := strings.TrimSpace(f[0])
		if id == "" {
			return nil, fmt.Errorf("sacct line %d: empty job id in %q", n+1, truncate(l))
		}
		e := strings.TrimSpace(f[1])
		el, err := model.ParseSiteDuration(e)
		if err != nil || !strings.Contains(e, ":") { // sacct's Elapsed is always [D-]HH:MM:SS, never a word
			return nil, fmt.Errorf("sacct line %d: job %s elapsed %q is not [D-]HH:MM:SS", n+1, id, truncate(f[1]))
		}
		j := RanJob{ID: id, Elapsed: el.D()}
		if lim := strings.TrimSpace(f[2]); !strings.EqualFold(lim, "Partition_Limit") {
			d, ok := parseLimit(lim)
			if !ok {
				return nil, fmt.Errorf("sacct line %d: job %s time limit %q: want UNLIMITED, Partition_Limit or [D-]HH:MM:SS", n+1, id, truncate(lim))
			}
			j.Limit = d.D()
		}
		res = append(res, j)
	}
	return res, nil
}

// Bounds of a prediction.
const (
	// RuntimeWindow is how many of the user's latest jobs of a limit a prediction reads.
	RuntimeWindow = 64
	// RuntimeMinSamples is the fewest jobs a ratio is taken from (else the limit holds).
	RuntimeMinSamples = 4
	// minRuntimeRatio keeps a prediction above a twentieth of the limit: a run of
	// jobs that failed at once must not have the plan count the next one as free.
	minRuntimeRatio = 0.05
)

// Runtimes predicts the runtimes of the site user's jobs from their recent history.
// The zero Runtimes predicts every job at its limit.
type Runtimes struct {
	byLimit map[time.Duration]float64 // median ratio of the recent jobs with that limit
}

// NewRuntimes learns from the history (any order): per limit, the latest
// RuntimeWindow jobs with it, by job id.
func NewRuntimes(hist []RanJob) Runtimes {
	jobs := make([]RanJob, 0, len(hist))
	for _, j := range hist {
		if j.Limit > 0 && j.Elapsed >= 0 {
			jobs = append(jobs, j)
		}
	}
	slices.SortStableFunc(jobs, func(a, b RanJob) int { return compareJobIDs(a.ID, b.ID) })
	by := map[time.Duration][]float64{}
	for _, j := range jobs {
		by[j.Limit] = append(by[j.Limit], min(float64(j.Elapsed)/float64(j.Limit), 1))
	}
	var rt Runtimes
	for lim, rs := range by {
		if len(rs) > RuntimeWindow {
			rs = rs[len(rs)-RuntimeWindow:]
		}
		if len(rs) >= RuntimeMinSamples {
			if rt.byLimit == nil {
				rt.byLimit = map[time.Duration]float64{}
			}
			rt.byLimit[lim] = max(median(rs), minRuntimeRatio)
		}
	}
	return rt
}

// Known reports whether the history predicts any limit.
func (r Runtimes) Known() bool { return len(r.byLimit) > 0 }

// Ratio is the predicted fraction of limit a job of the user's runs (1: unknown).
func (r Runtimes) Ratio(limit time.Duration) float64 {
	if q, ok := r.byLimit[limit]; ok && limit > 0 {
		return min(q, 1)
	}
	return 1
}

// Predict is the predicted runtime of a job of the user's with this limit (the limit
// when unknown; 0 stays unlimited), at least a second.
func (r Runtimes) Predict(limit time.Duration) time.Duration {
	q := r.Ratio(limit)
	if q >= 1 {
		return limit
	}
	return max(time.Duration(float64(limit)*q), time.Second)
}

func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
