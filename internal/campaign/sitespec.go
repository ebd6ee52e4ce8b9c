package campaign

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// LaunchMode says how `campaign launch` brings up one site's slice.
type LaunchMode string

// Launch modes.
const (
	// ModeAttach runs the slice inside an allocation the user already holds.
	ModeAttach LaunchMode = "attach"
	// ModeSubmit submits a new batch job that runs the slice.
	ModeSubmit LaunchMode = "submit"
	// ModeAuto lets the meta-scheduler choose the site.
	ModeAuto LaunchMode = "auto"
)

// SiteSpec is one parsed --site value of `campaign launch`.
type SiteSpec struct {
	// Name is the site (a system of sites.yaml); empty in auto mode.
	Name string `json:"name"`
	// Mode is inferred from the keys present.
	Mode LaunchMode `json:"mode"`
	// Agents is the slice to run there (order kept); empty means "the agents
	// whose site hint is Name".
	Agents []string `json:"agents,omitempty"`
	// Host is the compute node of the allocation (attach).
	Host string `json:"host,omitempty"`
	// JobID is the allocation's job id (attach; srun --overlap is used when set).
	JobID string `json:"job_id,omitempty"`
	// Queue, Walltime, Nodes and Account describe the job to submit (submit).
	Queue    string         `json:"queue,omitempty"`
	Walltime model.Duration `json:"walltime,omitempty"`
	Nodes    int            `json:"nodes,omitempty"`
	Account  string         `json:"account,omitempty"`
	// WorkDir is where the slice runs and writes its log on the site.
	WorkDir string `json:"workdir,omitempty"`
	// Campaign is the campaign file's path on the site (default: the local path).
	Campaign string `json:"campaign,omitempty"`
}

// siteKeys lists the keys a SPEC may hold, for error messages.
var siteKeys = []string{"attach", "jobid", "agents", "queue", "walltime", "nodes", "account", "workdir", "campaign"}

var (
	siteNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@+-]*$`)
	hostRe     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@:-]*$`)
	wordValRe  = regexp.MustCompile(`^[A-Za-z0-9._+-]+$`)
	jobIDRe    = regexp.MustCompile(`^[A-Za-z0-9._\[\]-]+$`)
)

// MaxSiteSpecLen bounds one --site value.
const MaxSiteSpecLen = 4096

// ParseSiteSpec parses `NAME:key=value;key=value`. Pairs are separated by ';'
// so that ',' can separate agents. Modes:
//
//	attach: NAME:attach=HOST;agents=a,b[;jobid=ID][;workdir=PATH][;campaign=PATH]
//	submit: NAME:queue=Q;walltime=HH:MM:SS[;nodes=N][;account=A][;agents=a,b][;workdir=PATH][;campaign=PATH]
//	auto:   auto;agents=a,b   (the meta-scheduler chooses the site)
//
// The mode is inferred; a spec mixing attach and submit keys, or missing a
// key its mode needs, is an error naming what to add or remove.
func ParseSiteSpec(raw string) (SiteSpec, error) {
	var sp SiteSpec
	if len(raw) > MaxSiteSpecLen {
		return sp, fmt.Errorf("--site value is longer than %d bytes", MaxSiteSpecLen)
	}
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return sp, errors.New("--site is empty; write NAME:attach=HOST;agents=a,b or NAME:queue=Q;walltime=HH:MM:SS")
	}
	var body string
	auto := false
	if rest, ok := strings.CutPrefix(raw, "auto;"); ok {
		auto, body = true, rest
	} else if raw == "auto" {
		auto = true
	} else {
		name, rest, found := strings.Cut(raw, ":")
		if !found {
			return sp, fmt.Errorf("--site %q: missing ':' after the site name; write NAME:key=value;key=value", raw)
		}
		name = strings.TrimSpace(name)
		if !siteNameRe.MatchString(name) {
			return sp, fmt.Errorf("--site %q: site name %q: use letters, digits and ._@+- (a system of sites.yaml)", raw, name)
		}
		sp.Name, body = name, rest
		if b, ok := strings.CutPrefix(strings.TrimSpace(body), "auto"); ok && (b == "" || strings.HasPrefix(b, ";")) {
			auto, body = true, strings.TrimPrefix(b, ";")
		}
	}
	kv := map[string]string{}
	for _, pair := range strings.Split(body, ";") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if !ok {
			return sp, fmt.Errorf("--site %q: %q is not key=value (keys: %s)", raw, pair, strings.Join(siteKeys, ", "))
		}
		if !slices.Contains(siteKeys, k) {
			return sp, fmt.Errorf("--site %q: unknown key %q (keys: %s)", raw, k, strings.Join(siteKeys, ", "))
		}
		if _, dup := kv[k]; dup {
			return sp, fmt.Errorf("--site %q: key %q given twice", raw, k)
		}
		if v == "" {
			return sp, fmt.Errorf("--site %q: key %q has an empty value", raw, k)
		}
		kv[k] = v
	}
	if err := sp.fill(raw, kv); err != nil {
		return sp, err
	}
	_, hasAttach := kv["attach"]
	_, hasJob := kv["jobid"]
	var submitKeys []string
	for _, k := range []string{"queue", "walltime", "nodes", "account"} {
		if _, ok := kv[k]; ok {
			submitKeys = append(submitKeys, k)
		}
	}
	switch {
	case auto:
		if hasAttach || hasJob || len(submitKeys) > 0 {
			return sp, fmt.Errorf("--site %q: auto placement takes only agents= (and workdir=, campaign=); remove the attach/submit keys or drop 'auto'", raw)
		}
		if len(sp.Agents) == 0 {
			return sp, fmt.Errorf("--site %q: auto placement needs agents=a,b", raw)
		}
		sp.Mode = ModeAuto
	case (hasAttach || hasJob) && len(submitKeys) > 0:
		return sp, fmt.Errorf("--site %q mixes attach keys (attach=, jobid=) with submit keys (%s); use attach=HOST to run in an allocation you hold, or queue=Q;walltime=HH:MM:SS to submit a new job", raw, strings.Join(submitKeys, ", "))
	case hasAttach || hasJob:
		if !hasAttach {
			return sp, fmt.Errorf("--site %q: jobid= needs attach=HOST (the allocation's compute node)", raw)
		}
		if len(sp.Agents) == 0 {
			return sp, fmt.Errorf("--site %q: attach mode needs agents=a,b (the slice to run in the allocation)", raw)
		}
		sp.Mode = ModeAttach
	case len(submitKeys) > 0:
		var missing []string
		if sp.Queue == "" {
			missing = append(missing, "queue=Q")
		}
		if sp.Walltime == 0 {
			missing = append(missing, "walltime=HH:MM:SS")
		}
		if len(missing) > 0 {
			return sp, fmt.Errorf("--site %q: submit mode also needs %s", raw, strings.Join(missing, " and "))
		}
		sp.Mode = ModeSubmit
	default:
		return sp, fmt.Errorf("--site %q: cannot tell the mode; add attach=HOST;agents=a,b (run in your allocation) or queue=Q;walltime=HH:MM:SS (submit a job), or write auto;agents=a,b", raw)
	}
	return sp, nil
}

// fill copies the key/values into sp, checking each value.
func (sp *SiteSpec) fill(raw string, kv map[string]string) error {
	for k, v := range kv {
		bad := func(why string) error { return fmt.Errorf("--site %q: %s=%q: %s", raw, k, v, why) }
		switch k {
		case "attach":
			if !hostRe.MatchString(v) {
				return bad("not a host name")
			}
			sp.Host = v
		case "jobid":
			if !jobIDRe.MatchString(v) {
				return bad("not a job id")
			}
			sp.JobID = v
		case "agents":
			sp.Agents = ParseAgentsSelection(v)
			if len(sp.Agents) == 0 {
				return bad("names no agent")
			}
			for _, a := range sp.Agents {
				if err := ValidateName(a); err != nil {
					return bad(err.Error())
				}
			}
		case "queue":
			if !wordValRe.MatchString(v) {
				return bad("use letters, digits and ._+-")
			}
			sp.Queue = v
		case "account":
			if !wordValRe.MatchString(v) {
				return bad("use letters, digits and ._+-")
			}
			sp.Account = v
		case "walltime":
			d, err := model.ParseDuration(v)
			if err != nil || d <= 0 {
				return bad("want a positive walltime such as 01:00:00")
			}
			sp.Walltime = d
		case "nodes":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 100000 {
				return bad("want a whole number of nodes, at least 1")
			}
			sp.Nodes = n
		case "workdir", "campaign":
			if strings.ContainsAny(v, "\x00\n\r") {
				return bad("paths may not hold control characters")
			}
			if k == "workdir" {
				sp.WorkDir = v
			} else {
				sp.Campaign = v
			}
		}
	}
	return nil
}

// String renders the spec back in the --site grammar (keys in a fixed order).
func (sp SiteSpec) String() string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	head := sp.Name + ":"
	if sp.Mode == ModeAuto {
		head = "auto;"
		if sp.Name != "" {
			head = sp.Name + ":auto;"
		}
	}
	add("attach", sp.Host)
	add("jobid", sp.JobID)
	add("queue", sp.Queue)
	if sp.Walltime > 0 {
		add("walltime", sp.Walltime.Slurm())
	}
	if sp.Nodes > 0 {
		add("nodes", strconv.Itoa(sp.Nodes))
	}
	add("account", sp.Account)
	add("agents", strings.Join(sp.Agents, ","))
	add("workdir", sp.WorkDir)
	add("campaign", sp.Campaign)
	return head + strings.Join(parts, ";")
}

// ArgError is an argument or validation error of a launch (a --site, the
// slices, the campaign, the catalog's sites, the run id), found before any
// remote work. The CLI exits 2 on it; runtime failures exit 1.
type ArgError struct{ Err error }

func (e *ArgError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *ArgError) Unwrap() error { return e.Err }

// argError marks err (nil stays nil) as an ArgError.
func argError(err error) error {
	if err == nil {
		return nil
	}
	var ae *ArgError
	if errors.As(err, &ae) {
		return err
	}
	return &ArgError{Err: err}
}

// CheckLaunch runs every check Launch makes before any remote work (the run
// id, the campaign, each --site and the slices, the catalog's sites, forwarded
// variable names) and fills what they resolve into o (each site's agents, the
// mosaic binary). Its errors are *ArgError unless the local machine failed
// (the executable's path). Launch runs the same checks again.
func CheckLaunch(o *LaunchOptions) error {
	_, err := planLaunch(o)
	return err
}

// ResolveSlices fills empty agent lists from the campaign's site hints and
// checks that the sites together run every agent exactly once, so that no
// peer waits for an agent nobody starts. Site names must be unique. Each
// problem is named once: an undeclared agent (with the declared ones), an
// agent listed twice in one agents=, an agent on two sites, a site given
// twice, agents no site runs (declared agents of a site that also names an
// unknown one still count as placed).
func ResolveSlices(s *Spec, sites []SiteSpec) error {
	var errs []error
	owner := map[string]string{}
	names := map[string]bool{}
	declared := map[string]bool{}
	for _, a := range s.Agents {
		declared[a.Name] = true
	}
	for i := range sites {
		sp := &sites[i]
		label := sp.Name
		if label == "" {
			label = fmt.Sprintf("auto#%d", i+1)
		}
		if sp.Name != "" {
			if names[sp.Name] {
				errs = append(errs, fmt.Errorf("site %s is given twice; put all of its agents in one --site", sp.Name))
			}
			names[sp.Name] = true
		}
		if len(sp.Agents) == 0 {
			for _, a := range s.Agents {
				if a.Site == sp.Name {
					sp.Agents = append(sp.Agents, a.Name)
				}
			}
			if len(sp.Agents) == 0 {
				errs = append(errs, fmt.Errorf("site %s: no agents= given and no agent of the campaign has \"site\": %q; add agents=a,b (declared: %s)", label, sp.Name, strings.Join(s.Names(), ", ")))
				continue
			}
		}
		var unknown, twice []string
		seen := map[string]bool{}
		for _, a := range sp.Agents {
			switch {
			case seen[a]:
				if !slices.Contains(twice, a) {
					twice = append(twice, a)
				}
				continue
			case !declared[a]:
				unknown = append(unknown, a)
			default:
				if prev, dup := owner[a]; dup {
					errs = append(errs, fmt.Errorf("agent %s is placed on both %s and %s; each agent runs on one site", a, prev, label))
				}
				owner[a] = label
			}
			seen[a] = true
		}
		if len(unknown) > 0 {
			errs = append(errs, fmt.Errorf("site %s: agent(s) %s not declared by campaign %q (declared: %s)", label, strings.Join(unknown, ", "), s.Name, strings.Join(s.Names(), ", ")))
		}
		if len(twice) > 0 {
			errs = append(errs, fmt.Errorf("site %s: agent(s) %s listed more than once in agents=", label, strings.Join(twice, ", ")))
		}
	}
	var missing []string
	for _, a := range s.Agents {
		if _, ok := owner[a.Name]; !ok {
			missing = append(missing, a.Name)
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("no --site runs agent(s) %s; add them to a site's agents= (their peers would wait for them forever)", strings.Join(missing, ", ")))
	}
	return errors.Join(errs...)
}
