package hpc

import (
	"sync"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// Bounds of the record of recent submissions.
const (
	// submittedKeep is how long a submission is kept after the site accepted it: an
	// estimate batch that started before then (and so may not list it) has ended long
	// before (its command is bounded by the transport's timeout).
	submittedKeep = 15 * time.Minute
	// maxSubmitted bounds the record; the oldest accepted submissions go first.
	maxSubmitted = 4096
)

// submissions records this site's recent submissions (every identity's: the per-owner
// providers share one), so an estimate batch can plan the jobs its listing may
// predate: one submitted while the batch ran, or still in flight. Without it two
// placements a moment apart both see the same idle GPUs and pick the same site (on the
// rig: a 4-GPU job sent to a cluster where a 1-GPU job had just been placed, while the
// other cluster was idle). The lock is held for the record only, never across I/O.
type submissions struct {
	mu   sync.Mutex
	list []*submission
}

type submission struct {
	by    *Provider // the identity that submitted it
	spec  model.JobSpec
	done  time.Time // when the site answered (zero: in flight)
	jobID string
	// expected: announced by the core before its Submit (ExpectSubmit, since begun);
	// adopted once the Submit of its tag has taken it over.
	expected, adopted bool
	begun             time.Time
	holds             int // announcements of the tag not yet released (the core's, the dispatch's)
}

// expectedKeep bounds an announcement whose Submit never comes (its release is lost).
const expectedKeep = 2 * time.Minute

// ExpectSubmit implements provider.SubmissionExpecter: until released, or taken over by
// the Submit of spec's tag, estimates plan spec ahead of theirs.
func (p *Provider) ExpectSubmit(spec model.JobSpec) (release func()) {
	e := p.submitted.expect(p, p.ordered(spec))
	var once sync.Once
	return func() { once.Do(func() { p.submitted.release(e) }) }
}

// sizeOnly is what the record keeps of a spec: its size and place, not its command,
// script or environment (which may carry the job's secrets).
func sizeOnly(spec model.JobSpec) model.JobSpec {
	spec.Command, spec.Script, spec.Env = "", "", nil
	return spec
}

// expect records an announced submission.
func (s *submissions) expect(by *Provider, spec model.JobSpec) *submission {
	e := &submission{by: by, spec: sizeOnly(spec), expected: true, begun: time.Now(), holds: 1}
	if s == nil {
		return e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked(e.begun)
	if x := s.announcedLocked(spec.Tag); x != nil { // the core's and the dispatch's: one job
		x.holds++
		return x
	}
	s.list = append(s.list, e)
	return e
}

// release drops an announcement no Submit has taken over, once every announcement of
// its tag is released.
func (s *submissions) release(e *submission) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.holds--; e.holds <= 0 && !e.adopted {
		s.dropLocked(e)
	}
}

// announcedLocked is the tag's announcement no Submit has taken over yet (nil: none).
func (s *submissions) announcedLocked(tag string) *submission {
	if tag == "" {
		return nil
	}
	for _, x := range s.list {
		if x.expected && !x.adopted && x.done.IsZero() && x.spec.Tag == tag {
			return x
		}
	}
	return nil
}

func (s *submissions) dropLocked(e *submission) {
	for i, x := range s.list {
		if x == e {
			s.list = append(s.list[:i], s.list[i+1:]...)
			return
		}
	}
}

// begin records a submission about to be sent, taking over its tag's announcement if
// there is one (a nil record keeps nothing).
func (s *submissions) begin(by *Provider, spec model.JobSpec) *submission {
	spec = sizeOnly(spec)
	e := &submission{by: by, spec: spec, begun: time.Now()}
	if s == nil {
		return e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked(e.begun)
	if x := s.announcedLocked(spec.Tag); x != nil {
		x.by, x.spec, x.adopted = by, spec, true
		return x
	}
	s.list = append(s.list, e)
	return e
}

// end records the site's answer: the job id, or ok false when it refused (the
// submission is dropped: there is no job).
func (s *submissions) end(e *submission, jobID string, ok bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !ok {
		s.dropLocked(e)
		return
	}
	e.done, e.jobID = time.Now(), jobID
}

// since are the submissions a listing taken after start may not show: in flight, or
// accepted after start. Own: submitted by the identity by.
func (s *submissions) since(start time.Time, by *Provider) []dialect.Submitted {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []dialect.Submitted
	for _, e := range s.list {
		if e.done.IsZero() || e.done.After(start) {
			out = append(out, dialect.Submitted{JobID: e.jobID, Spec: e.spec, Own: e.by == by})
		}
	}
	return out
}

// pruneLocked drops accepted submissions older than submittedKeep, announcements
// older than expectedKeep that no Submit took over, and the oldest accepted ones
// beyond maxSubmitted.
func (s *submissions) pruneLocked(now time.Time) {
	keep := s.list[:0]
	for _, e := range s.list {
		stale := e.expected && !e.adopted && now.Sub(e.begun) >= expectedKeep
		if !stale && (e.done.IsZero() || now.Sub(e.done) < submittedKeep) {
			keep = append(keep, e)
		}
	}
	clear(s.list[len(keep):])
	s.list = keep
	for i := 0; len(s.list) >= maxSubmitted && i < len(s.list); {
		if !s.list[i].done.IsZero() {
			s.list = append(s.list[:i], s.list[i+1:]...)
			continue
		}
		i++
	}
}
