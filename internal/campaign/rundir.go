package campaign

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/exchange"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// Run states recorded in a run directory.
const (
	RunStarting = "starting"
	RunReady    = "ready"
	RunFinished = "finished"
	RunFailed   = "failed"
	RunStopped  = "stopped"
)

// RunState is what a run directory records about a launch (state.json).
type RunState struct {
	RunID        string    `json:"run_id"`
	Campaign     string    `json:"campaign"`      // absolute path of the campaign file
	CampaignName string    `json:"campaign_name"` // its "name"
	State        string    `json:"state"`
	Created      time.Time `json:"created"`
	Updated      time.Time `json:"updated"`
	ExchangeURL  string    `json:"exchange_url"`
	// ExchangeLocalURL is where the launcher (on this machine) reaches the
	// exchange; `campaign status`, `campaign timeline` and the core read the
	// live timeline there with the run token.
	ExchangeLocalURL string `json:"exchange_local_url,omitempty"`
	// ExchangeListen is the listen address of the exchange embedded in the
	// launcher ("" = an external exchange); `campaign resume` serves it there
	// again.
	ExchangeListen string `json:"exchange_listen,omitempty"`
	// ExchangeBackend is the embedded exchange's backend: BackendMemory (its
	// state dies with the launcher) or BackendRedis (RedisURL, password
	// redacted, holds it: `campaign resume` can bring it back).
	ExchangeBackend string `json:"exchange_backend,omitempty"`
	RedisURL        string `json:"redis_url,omitempty"`
	// MosaicBin and Tunnel are the launch's --mosaic-bin and --tunnel (resume
	// reopens the tunnels the same way).
	MosaicBin string `json:"mosaic_bin,omitempty"`
	Tunnel    string `json:"tunnel,omitempty"`
	// LauncherPID is the process following the run: the launcher, or the
	// `campaign resume` that took over from it.
	LauncherPID  int    `json:"launcher_pid,omitempty"`
	Bootstrapped bool   `json:"bootstrapped,omitempty"`
	Error        string `json:"error,omitempty"`
	// TasksStore is the store holding the run's submit-mode jobs as tasks (the
	// core's store the launcher used); `campaign stop` cancels them through it.
	// A PostgreSQL URL is kept without its password (store.RedactDSN).
	TasksStore string      `json:"tasks_store,omitempty"`
	Sites      []SiteState `json:"sites"`
	// Counts are the per-site message counts last read from the run's
	// exchange (updated with timeline.json while the run is followed).
	Counts []exchange.SiteCount `json:"counts,omitempty"`
}

// Backends of the exchange embedded in the launcher (RunState.ExchangeBackend,
// the campaign's exchange.backend).
const (
	BackendMemory = "memory"
	BackendRedis  = "redis"
)

// RedactURL hides the password of a URL's user info (redis://:secret@host
// -> redis://:xxxxx@host), for messages and the run directory (see
// exchange.RedactURL).
func RedactURL(u string) string { return exchange.RedactURL(u) }

// SiteState is one site of a run.
type SiteState struct {
	SiteSpec
	// Login is the login host (ssh alias) or "localhost".
	Login string `json:"login,omitempty"`
	// RemoteDir holds the site's log, token and pid files.
	RemoteDir string `json:"remote_dir,omitempty"`
	// Exchange is the exchange URL the site's agents use.
	Exchange string `json:"exchange,omitempty"`
	// Log is the remote log of the slice.
	Log string `json:"log,omitempty"`
	// TaskID is the core's task that runs the site's job (submit mode): stored
	// before the site is called.
	TaskID string `json:"task_id,omitempty"`
	// SubmittedJob is the batch job id Mosaic submitted (submit mode).
	SubmittedJob string `json:"submitted_job,omitempty"`
	// JobTag is the submitted job's name (submit mode): stop finds the job by it
	// when its id was never recorded.
	JobTag string `json:"job_tag,omitempty"`
	// StepName names the srun step Mosaic started inside JobID (attach mode).
	StepName string `json:"step_name,omitempty"`
	// SSHPID is the pid of the local ssh running an attach-mode slice.
	SSHPID int `json:"ssh_pid,omitempty"`
	// State is the last observed state (submitting, pending, running, ready, succeeded, failed, cancelled, stopped).
	State   string    `json:"state"`
	Error   string    `json:"error,omitempty"`
	Updated time.Time `json:"updated"`
}

var runIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ValidateRunID checks a run id: it names a directory and travels in uids and
// job names.
func ValidateRunID(id string) error {
	if !runIDRe.MatchString(id) {
		return fmt.Errorf("run id %q: use 1-128 letters, digits and ._- (not starting with . or -)", id)
	}
	return nil
}

// RunDir is a run's directory under the campaigns root: state.json, the
// exchange token (0600), timeline.json.
type RunDir struct {
	Path string
	mu   sync.Mutex
	st   RunState
}

// CampaignsRoot is where run directories live under a Mosaic state directory.
func CampaignsRoot(stateDir string) string { return filepath.Join(stateDir, "campaigns") }

// CreateRunDir makes a new run directory; an existing one is refused (run ids
// are rendezvous keys: reusing one would mix two runs' mailboxes).
func CreateRunDir(root string, st RunState) (*RunDir, error) {
	if err := ValidateRunID(st.RunID); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("campaigns directory %s: %w", root, err)
	}
	p := filepath.Join(root, st.RunID)
	if err := os.Mkdir(p, 0o700); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("run %s already exists (%s); choose another --run-id, or see it with `mosaic campaign status %s`", st.RunID, p, st.RunID)
		}
		return nil, fmt.Errorf("create run directory: %w", err)
	}
	now := time.Now().UTC()
	st.Created, st.Updated = now, now
	d := &RunDir{Path: p, st: st}
	return d, d.save()
}

// OpenRunDir opens an existing run directory.
func OpenRunDir(root, runID string) (*RunDir, error) {
	if err := ValidateRunID(runID); err != nil {
		return nil, err
	}
	p := filepath.Join(root, runID)
	data, err := os.ReadFile(filepath.Join(p, "state.json"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no run %s under %s; list runs with `mosaic campaign status`", runID, root)
		}
		return nil, fmt.Errorf("read run %s: %w", runID, err)
	}
	d := &RunDir{Path: p}
	if err := json.Unmarshal(data, &d.st); err != nil {
		return nil, fmt.Errorf("run %s: state.json is damaged: %w", runID, err)
	}
	d.st.TasksStore = store.RedactDSN(d.st.TasksStore) // one written before the password was kept out
	return d, nil
}

// State returns a copy of the recorded state.
func (d *RunDir) State() RunState {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.st
	st.Sites = append([]SiteState(nil), d.st.Sites...)
	return st
}

// Update applies fn and writes state.json durably before returning.
func (d *RunDir) Update(fn func(*RunState)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	fn(&d.st)
	d.st.Updated = time.Now().UTC()
	return d.save()
}

// UpdateSite applies fn to the named site and saves.
func (d *RunDir) UpdateSite(name string, fn func(*SiteState)) error {
	return d.Update(func(st *RunState) {
		for i := range st.Sites {
			if st.Sites[i].Name == name {
				fn(&st.Sites[i])
				st.Sites[i].Updated = time.Now().UTC()
			}
		}
	})
}

func (d *RunDir) save() error {
	d.st.TasksStore = store.RedactDSN(d.st.TasksStore) // a PostgreSQL URL's password never reaches the run directory
	data, err := json.MarshalIndent(d.st, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(d.Path, "state.json"), append(data, '\n'), 0o600)
}

// WriteToken stores the run's exchange token (mode 0600).
func (d *RunDir) WriteToken(tok string) error {
	return writeFileAtomic(filepath.Join(d.Path, "token"), []byte(tok+"\n"), 0o600)
}

// Token reads the run's exchange token.
func (d *RunDir) Token() (string, error) {
	b, err := os.ReadFile(filepath.Join(d.Path, "token"))
	if err != nil {
		return "", fmt.Errorf("run token: %w", err)
	}
	return string(trimNL(b)), nil
}

// WriteJSON stores v as name (e.g. timeline.json) in the run directory.
func (d *RunDir) WriteJSON(name string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(d.Path, name), append(data, '\n'), 0o600)
}

// ReadJSON loads name from the run directory into v.
func (d *RunDir) ReadJSON(name string, v any) error {
	data, err := os.ReadFile(filepath.Join(d.Path, name))
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// ListRuns returns the states of every run under root, newest first. Damaged
// directories are skipped.
func ListRuns(root string) ([]RunState, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("list runs: %w", err)
	}
	var out []RunState
	for _, e := range ents {
		if !e.IsDir() || ValidateRunID(e.Name()) != nil {
			continue
		}
		d, err := OpenRunDir(root, e.Name())
		if err != nil {
			continue
		}
		out = append(out, d.State())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	return out, nil
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// writeFileAtomic writes via a synced temporary file and rename.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	name := tmp.Name()
	defer os.Remove(name)
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(name, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
