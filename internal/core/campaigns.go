package core

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/campaign"
	"github.com/mosaic-hpc/mosaic/internal/config"
	"github.com/mosaic-hpc/mosaic/internal/exchange"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// campaignState is the campaign part of a Core: its embedded exchange (made on
// first use) and the directory of launched runs. Each Core builds its own in
// New, so two cores in one process share nothing.
type campaignState struct {
	once sync.Once
	srv  *exchange.Server
	mu   sync.Mutex
	root string
	// owners records who claimed each run through this core (its run token and
	// policy); runs with submit-mode jobs are also owned by their tasks' owner.
	owners map[string]string
}

// runOwner is the owner of run: whoever claimed it here (CampaignToken), else the
// owner of its submit-mode jobs, else (known=false) nobody yet.
func (c *Core) runOwner(ctx context.Context, run string) (owner string, known bool, err error) {
	cs := c.campaigns()
	cs.mu.Lock()
	owner, known = cs.owners[run]
	cs.mu.Unlock()
	if known || c.store == nil {
		return owner, known, nil
	}
	owners, err := c.store.RunOwners(ctx)
	if err != nil {
		return "", false, err
	}
	owner, known = owners[run]
	return owner, known, nil
}

// checkRun refuses a run the caller does not own (admins own all). A run directory
// nobody claimed through this core is the laptop user's (a launch from the CLI).
func (c *Core) checkRun(ctx context.Context, run string) error {
	owner, known, err := c.runOwner(ctx, run)
	if err != nil {
		return err
	}
	if !known {
		owner = model.LocalUser
	}
	return checkRunOwner(ctx, run, owner)
}

func checkRunOwner(ctx context.Context, run, owner string) error {
	caller := model.CallerOf(ctx)
	if caller.Owns(owner) {
		return nil
	}
	return fmt.Errorf("campaign run %s belongs to another user, and %s is not an admin: a user reads and steers their own runs only "+
		"(`mosaic campaign runs` lists yours; launch under a new run id): %w", run, caller.Name, ErrForbidden)
}

// claimRun makes the caller run's owner unless someone else already owns it (403 then,
// unless the caller is an admin; the owner stays). A run directory nobody claimed
// is the laptop user's, unless dirClaimable (a launcher's first submit-mode job:
// the launcher writes the run directory before it submits).
func (c *Core) claimRun(ctx context.Context, run string, dirClaimable bool) error {
	owner, known, err := c.runOwner(ctx, run)
	if err != nil {
		return err
	}
	if !known && !dirClaimable {
		if _, derr := c.openRun(run); derr == nil {
			owner, known = model.LocalUser, true
		}
	}
	if known {
		return checkRunOwner(ctx, run, owner)
	}
	cs := c.campaigns()
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.owners == nil {
		cs.owners = map[string]string{}
	}
	if o, ok := cs.owners[run]; ok { // claimed meanwhile
		return checkRunOwner(ctx, run, o)
	}
	cs.owners[run] = model.CallerOf(ctx).Name
	return nil
}

func (c *Core) campaigns() *campaignState { return c.camp }

// Exchange returns the agent exchange embedded in this core, created on first
// use (in-memory backend). The API serves it under /exchange/ with its own
// per-run bearer tokens.
func (c *Core) Exchange() *exchange.Server {
	cs := c.campaigns()
	cs.once.Do(func() {
		cs.srv = exchange.NewServer(exchange.Config{Logger: c.log, OnMessage: c.metrics.ExchangeMessage})
	})
	return cs.srv
}

// SetCampaignsRoot sets the directory holding launched runs (normally
// campaign.CampaignsRoot(cfg.StateDir)). Unset, it is derived from the
// environment like the CLI does.
func (c *Core) SetCampaignsRoot(dir string) {
	cs := c.campaigns()
	cs.mu.Lock()
	cs.root = dir
	cs.mu.Unlock()
}

func (c *Core) campaignsRoot() (string, error) {
	cs := c.campaigns()
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.root == "" {
		cfg, err := config.Resolve(os.LookupEnv)
		if err != nil {
			return "", err
		}
		cs.root = campaign.CampaignsRoot(cfg.StateDir)
	}
	return cs.root, nil
}

// CampaignRunSummary is one launched run in a listing.
type CampaignRunSummary struct {
	RunID    string    `json:"run_id"`
	Campaign string    `json:"campaign"`
	State    string    `json:"state"`
	Sites    []string  `json:"sites"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
}

// CampaignRuns lists the launched runs the caller owns (all for an admin), newest first.
func (c *Core) CampaignRuns(ctx context.Context) ([]CampaignRunSummary, error) {
	root, err := c.campaignsRoot()
	if err != nil {
		return nil, err
	}
	runs, err := campaign.ListRuns(root)
	if err != nil {
		return nil, err
	}
	out := make([]CampaignRunSummary, 0, len(runs))
	for _, r := range runs {
		if c.checkRun(ctx, r.RunID) != nil {
			continue
		}
		s := CampaignRunSummary{RunID: r.RunID, Campaign: r.CampaignName, State: r.State, Created: r.Created, Updated: r.Updated, Sites: []string{}}
		for _, st := range r.Sites {
			s.Sites = append(s.Sites, st.Name)
		}
		out = append(out, s)
	}
	return out, nil
}

// CampaignSite is one site of a run: its agents, job ids and state.
type CampaignSite struct {
	Name         string    `json:"name"`
	Mode         string    `json:"mode"`
	Agents       []string  `json:"agents"`
	JobID        string    `json:"job_id,omitempty"`        // the allocation attached to
	TaskID       string    `json:"task_id,omitempty"`       // the task running the submitted job
	SubmittedJob string    `json:"submitted_job,omitempty"` // the job Mosaic submitted
	Host         string    `json:"host,omitempty"`
	Login        string    `json:"login,omitempty"`
	Log          string    `json:"log,omitempty"`
	State        string    `json:"state"`
	Error        string    `json:"error,omitempty"`
	Updated      time.Time `json:"updated"`
}

// CampaignRunDetail is one run with its per-site status and message counts.
type CampaignRunDetail struct {
	CampaignRunSummary
	ExchangeURL  string               `json:"exchange_url"`
	Bootstrapped bool                 `json:"bootstrapped"`
	Error        string               `json:"error,omitempty"`
	SiteStatus   []CampaignSite       `json:"site_status"`
	Counts       []exchange.SiteCount `json:"counts"`
}

func (c *Core) openRun(run string) (*campaign.RunDir, error) {
	if err := campaign.ValidateRunID(run); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	root, err := c.campaignsRoot()
	if err != nil {
		return nil, err
	}
	d, err := campaign.OpenRunDir(root, run)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	return d, nil
}

// CampaignRun returns one run's status from its run directory.
func (c *Core) CampaignRun(ctx context.Context, run string) (*CampaignRunDetail, error) {
	if err := campaign.ValidateRunID(run); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := c.checkRun(ctx, run); err != nil {
		return nil, err
	}
	d, err := c.openRun(run)
	if err != nil {
		return nil, err
	}
	st := d.State()
	out := &CampaignRunDetail{
		CampaignRunSummary: CampaignRunSummary{RunID: st.RunID, Campaign: st.CampaignName, State: st.State, Created: st.Created, Updated: st.Updated, Sites: []string{}},
		ExchangeURL:        st.ExchangeURL, Bootstrapped: st.Bootstrapped, Error: st.Error, SiteStatus: []CampaignSite{},
	}
	for _, s := range st.Sites {
		out.Sites = append(out.Sites, s.Name)
		out.SiteStatus = append(out.SiteStatus, CampaignSite{Name: s.Name, Mode: string(s.Mode), Agents: s.Agents, JobID: s.JobID, TaskID: s.TaskID,
			SubmittedJob: s.SubmittedJob, Host: s.Host, Login: s.Login, Log: s.Log, State: s.State, Error: s.Error, Updated: s.Updated})
	}
	tl, err := c.CampaignTimeline(ctx, run)
	if err == nil {
		out.Counts = tl.Counts
	}
	return out, nil
}

// TimelineEntry is one message of a run, tagged with its sites.
type TimelineEntry struct {
	exchange.MessageRecord
	CrossSite bool `json:"cross_site"`
}

// CampaignTimeline is a run's messages merged across sites in time order.
type CampaignTimeline struct {
	RunID    string               `json:"run_id"`
	Source   string               `json:"source"` // TimelineFrom* values
	Messages []TimelineEntry      `json:"messages"`
	Counts   []exchange.SiteCount `json:"counts"`
}

// Sources of a CampaignTimeline.
const (
	TimelineFromExchange    = "exchange"                       // live, from this core's exchange
	TimelineFromRunExchange = campaign.TimelineFromRunExchange // live, from the exchange the run's launcher uses
	TimelineFromRunDir      = campaign.TimelineFromRunDir      // timeline.json, as the launcher last recorded it
)

// CampaignTimeline returns a run's messages: from this core's exchange when
// the run uses it; else, while the run is not over, live from the exchange its
// launcher uses (the URL recorded in the run directory, with the run token of
// its 0600 file: embedded in the launcher or external); else, or when that
// exchange does not answer, from the timeline the launcher keeps in the run
// directory.
func (c *Core) CampaignTimeline(ctx context.Context, run string) (*CampaignTimeline, error) {
	if err := campaign.ValidateRunID(run); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := c.checkRun(ctx, run); err != nil {
		return nil, err
	}
	out := &CampaignTimeline{RunID: run, Messages: []TimelineEntry{}, Counts: []exchange.SiteCount{}}
	recs, err := c.Exchange().TimelineContext(ctx, run)
	if err != nil {
		return nil, fmt.Errorf("exchange timeline: %w", err)
	}
	if len(recs) > 0 {
		out.Source = TimelineFromExchange
		if counts, err := c.Exchange().SiteCounts(ctx, run); err == nil {
			out.Counts = counts
		}
	} else {
		d, err := c.openRun(run)
		if err != nil {
			return nil, err
		}
		tl, err := campaign.ReadRunTimeline(ctx, d)
		if err != nil {
			return nil, err
		}
		out.Source, recs, out.Counts = tl.Source, tl.Messages, tl.Counts
		if len(out.Counts) == 0 {
			out.Counts = countRecords(recs) // a run directory older than recorded counts
		}
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Time.Before(recs[j].Time) })
	for _, r := range recs {
		out.Messages = append(out.Messages, TimelineEntry{MessageRecord: r, CrossSite: r.CrossSite()})
	}
	return out, nil
}

// countRecords summarises messages per site (mailbox counts are unknown
// without the exchange).
func countRecords(recs []exchange.MessageRecord) []exchange.SiteCount {
	m := map[string]*exchange.SiteCount{}
	get := func(s string) *exchange.SiteCount {
		if m[s] == nil {
			m[s] = &exchange.SiteCount{Site: s}
		}
		return m[s]
	}
	for _, r := range recs {
		s := get(r.SrcSite)
		s.Sent++
		s.Bytes += int64(r.Size)
		if r.CrossSite() {
			s.CrossSite++
		}
		get(r.DestSite).Received++
	}
	out := make([]exchange.SiteCount, 0, len(m))
	for _, c := range m {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Site < out[j].Site })
	return out
}

// CampaignToken issues the run (operator) token of this core's exchange for
// run and, when camp is given, enforces the campaign for the run: each declared
// agent then has its own token, derived from the run token (agent.AgentToken),
// that opens only its own mailbox. The first caller owns the run; another user's
// run is refused (403) unless the caller is an admin. Policy changes are audited.
func (c *Core) CampaignToken(ctx context.Context, run string, camp *model.Campaign) (string, error) {
	if err := campaign.ValidateRunID(run); err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := c.claimRun(ctx, run, false); err != nil {
		return "", err
	}
	if camp != nil {
		if err := c.Exchange().RegisterCampaign(ctx, run, *camp); err != nil {
			return "", err
		}
		c.audit(ctx, "campaign.policy", run, fmt.Sprintf("campaign %s, %d agents", camp.Name, len(camp.Agents)))
	}
	tok, err := c.Exchange().IssueToken(ctx, run)
	if err == nil {
		c.audit(ctx, "campaign.launch", run, "run token issued")
	}
	return tok, err
}
