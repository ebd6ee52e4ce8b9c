package waits

import (
	"math"
	"slices"
	"sync"
	"time"
)

// maxCalibrationSamples bounds a Calibration's memory per partition.
const maxCalibrationSamples = 1 << 16

// Calibration collects, per partition, how observed waits compare with the predicted
// ones: the site's own estimate (raw) and the learner's correction of it, both as
// made at placement. It is what `mosaic sim replay --calibration` prints.
type Calibration struct {
	slack time.Duration
	mu    sync.Mutex
	parts map[key]*calib
}

// calib is one partition's: the log-errors of the jobs the site expected to wait
// (estimate ≥ Bins[0]), and the count of those it expected to start at once.
type calib struct {
	raw, corrected []float64
	now, nowLate   int
}

// NewCalibration collects ratios (observed+slack)/(predicted+slack); slack ≤ 0 means
// DefaultSlack.
func NewCalibration(slack time.Duration) *Calibration {
	if slack <= 0 {
		slack = DefaultSlack
	}
	return &Calibration{slack: slack, parts: map[key]*calib{}}
}

// Add records one job: the site's estimated wait raw, the corrected estimate the
// ranker used, and the wait observed. A job the site expected to start at once (raw
// under Bins[0], a minute) is only counted, with whether it waited longer than that:
// such estimates are nearly always exact and would drown the quantiles of the others.
// Beyond 65,536 jobs per partition, or with an empty system or partition, it records
// nothing.
func (c *Calibration) Add(system, partition string, raw, corrected, observed time.Duration) {
	if c == nil || system == "" || partition == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := key{system, partition}
	p := c.parts[k]
	if p == nil {
		p = &calib{}
		c.parts[k] = p
	}
	if len(p.raw)+p.now >= maxCalibrationSamples {
		return
	}
	if clampWait(raw) < Bins[0] {
		p.now++
		if observed > Bins[0] {
			p.nowLate++
		}
		return
	}
	p.raw = append(p.raw, LogError(raw, observed, c.slack))
	p.corrected = append(p.corrected, LogError(corrected, observed, c.slack))
}

// Quantiles of observed/predicted: below 1 the prediction was pessimistic, above 1
// optimistic. MAE is the mean absolute log-error |ln(observed/predicted)| (0 is
// perfect; ln 2 ≈ 0.69 is "off by 2× on average"); Within2x the share of jobs whose
// prediction was within a factor of 2.
type Quantiles struct {
	P10      float64 `json:"p10"`
	P50      float64 `json:"p50"`
	P90      float64 `json:"p90"`
	MAE      float64 `json:"mean_abs_log_error"`
	Within2x float64 `json:"within_2x"`
}

// CalibrationRow is one partition's calibration ("*" for all partitions together):
// of its Jobs, Now were expected by the site to start within a minute (NowLate of
// them waited longer); the quantiles are over the other Waiting ones.
type CalibrationRow struct {
	System    string    `json:"system"`
	Partition string    `json:"partition"`
	Jobs      int       `json:"jobs"`
	Now       int       `json:"site_said_now"`
	NowLate   int       `json:"site_said_now_waited_longer"`
	Waiting   int       `json:"site_said_wait"`
	Raw       Quantiles `json:"site_estimate"`
	Corrected Quantiles `json:"corrected"`
}

func summarize(es []float64) Quantiles {
	if len(es) == 0 {
		return Quantiles{}
	}
	s := slices.Clone(es)
	slices.Sort(s)
	var abs float64
	within := 0
	for _, e := range s {
		abs += math.Abs(e)
		if math.Abs(e) <= math.Ln2 {
			within++
		}
	}
	r3 := func(x float64) float64 { return math.Round(x*1000) / 1000 }
	return Quantiles{P10: r3(math.Exp(quantile(s, 0.1))), P50: r3(math.Exp(quantile(s, 0.5))), P90: r3(math.Exp(quantile(s, 0.9))),
		MAE: r3(abs / float64(len(s))), Within2x: r3(float64(within) / float64(len(s)))}
}

// Rows returns one row per partition (by system, then partition) and, when there
// are any, a last row "*"/"*" over all of them.
func (c *Calibration) Rows() []CalibrationRow {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []CalibrationRow
	var allRaw, allCor []float64
	all := CalibrationRow{System: "*", Partition: "*"}
	for k, p := range c.parts {
		out = append(out, CalibrationRow{System: k.system, Partition: k.partition, Jobs: len(p.raw) + p.now, Now: p.now,
			NowLate: p.nowLate, Waiting: len(p.raw), Raw: summarize(p.raw), Corrected: summarize(p.corrected)})
		allRaw = append(allRaw, p.raw...)
		allCor = append(allCor, p.corrected...)
		all.Jobs, all.Now, all.NowLate, all.Waiting = all.Jobs+len(p.raw)+p.now, all.Now+p.now, all.NowLate+p.nowLate, all.Waiting+len(p.raw)
	}
	slices.SortFunc(out, func(a, b CalibrationRow) int {
		if a.System != b.System {
			return cmpStr(a.System, b.System)
		}
		return cmpStr(a.Partition, b.Partition)
	})
	if len(out) > 0 {
		all.Raw, all.Corrected = summarize(allRaw), summarize(allCor)
		out = append(out, all)
	}
	return out
}
