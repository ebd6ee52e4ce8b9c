// Package globus is the Globus Compute transport: it runs the same argument vectors
// the SSH transport runs, on a login node where the user runs a Globus Compute
// endpoint, through the Globus Compute web service. It registers one pure-source
// Python function (PureSourceTextInspect, "st") per content hash, submits tasks with
// JSONData ("11") arguments and JSONData results, polls /v2/batch_status with bounded
// backoff, caps result sizes, and keeps a circuit breaker per endpoint.
package globus

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/errs"
	"github.com/mosaic-hpc/mosaic/internal/transport"
)

// DefaultMaxResult caps one serialized task result (the SDK caps ShellFunction
// results at 10 MiB, sdk/shell_function.py).
const DefaultMaxResult = 10 << 20

// maxStdin bounds stdin shipped as an argument.
const maxStdin = 4 << 20

// ErrResultTooLarge is returned for results over the cap; it is a
// transport.ErrOutputTooLarge.
var ErrResultTooLarge = fmt.Errorf("globus compute result exceeds the result size cap: %w", transport.ErrOutputTooLarge)

// ErrTaskFailed means the remote function raised instead of returning.
var ErrTaskFailed = errors.New("globus compute task failed")

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// ValidEndpointID reports whether s looks like an endpoint UUID.
func ValidEndpointID(s string) bool { return uuidRE.MatchString(s) }

// Backoff is the polling schedule: Initial, growing by half each poll, up to Max.
type Backoff struct {
	Initial time.Duration
	Max     time.Duration
}

func (b Backoff) next(d time.Duration) time.Duration {
	if d == 0 {
		if b.Initial <= 0 {
			return 250 * time.Millisecond
		}
		return b.Initial
	}
	d += d / 2
	limit := b.Max
	if limit <= 0 {
		limit = 2 * time.Second
	}
	return min(d, limit)
}

// Transport runs commands on one Globus Compute endpoint.
type Transport struct {
	// Endpoint is the endpoint UUID.
	Endpoint string
	// Client is the web-service client (shared between transports so the function
	// is registered once).
	Client *Client
	transport.Limits
	// MaxResult caps one serialized result; 0 means DefaultMaxResult.
	MaxResult int
	// Poll is the status polling schedule.
	Poll Backoff
	// Breaker is the endpoint's breaker (a core's Breakers.For(Endpoint)); nil gives
	// the transport a breaker of its own.
	Breaker *Breaker
	// StatusTTL is how long an "online" endpoint status is trusted; 0 means 30s.
	StatusTTL time.Duration
	// PendingCheck is how long a task may stay pending before the endpoint status is
	// asked again; 0 means 10s.
	PendingCheck time.Duration
	// Log receives task ids and errors, never tokens.
	Log *slog.Logger

	mu         sync.Mutex
	lastOnline time.Time
}

var _ transport.Transport = (*Transport)(nil)

// New builds a transport for an endpoint with a client.
func New(endpoint string, c *Client) *Transport {
	return &Transport{Endpoint: endpoint, Client: c}
}

func (t *Transport) breaker() *Breaker {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.Breaker == nil {
		t.Breaker = &Breaker{}
	}
	return t.Breaker
}

func (t *Transport) log() *slog.Logger {
	if t.Log != nil {
		return t.Log
	}
	return slog.Default()
}

func (t *Transport) maxResult() int {
	if t.MaxResult <= 0 {
		return DefaultMaxResult
	}
	return t.MaxResult
}

// maxOutput is what the remote function may return in stdout+stderr: the transport's
// output cap, and small enough that base64 inside JSON fits the result cap.
func (t *Transport) maxOutput() int {
	out := t.Limits.MaxOutput
	if out <= 0 {
		out = transport.DefaultMaxOutput
	}
	fit := (t.maxResult()-1024)/4*3 - 3
	return max(0, min(out, fit))
}

func (t *Transport) timeout() time.Duration {
	if t.Limits.Timeout == 0 {
		return transport.DefaultTimeout
	}
	return t.Limits.Timeout
}

// shellResult is the function's return value.
type shellResult struct {
	ReturnCode int    `json:"returncode"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	Encoding   string `json:"encoding"`
	Truncated  bool   `json:"truncated"`
}

// Run executes argv on the endpoint's host with stdin.
func (t *Transport) Run(ctx context.Context, argv []string, stdin io.Reader) (transport.Result, error) {
	start := time.Now()
	if len(argv) == 0 {
		return transport.Result{}, errors.New("globus transport: empty command")
	}
	if !ValidEndpointID(t.Endpoint) {
		return transport.Result{}, fmt.Errorf("globus transport: endpoint %q is not a UUID; run `mosaic endpoints` to list yours", t.Endpoint)
	}
	if t.Client == nil {
		return transport.Result{}, errors.New("globus transport: no client configured")
	}
	br := t.breaker()
	if err := br.Allow(); err != nil {
		return transport.Result{}, fmt.Errorf("globus endpoint %s: %w", t.Endpoint, err)
	}
	var timeoutSecs float64
	var cancel context.CancelFunc = func() {}
	if d := t.timeout(); d > 0 {
		ctx, cancel = context.WithTimeoutCause(ctx, d, transport.ErrTimeout)
		timeoutSecs = d.Seconds()
	}
	defer cancel()

	var in string
	if stdin != nil {
		b, err := io.ReadAll(io.LimitReader(stdin, maxStdin+1))
		if err != nil {
			return transport.Result{}, fmt.Errorf("globus transport: reading stdin: %w", err)
		}
		if len(b) > maxStdin {
			return transport.Result{}, fmt.Errorf("globus transport: stdin over %d bytes cannot travel as a task argument", maxStdin)
		}
		in = base64.StdEncoding.EncodeToString(b)
	}
	if err := t.ensureOnline(ctx, false); err != nil {
		return transport.Result{}, t.ctxErr(ctx, err)
	}
	fid, err := t.Client.function(ctx)
	if err != nil {
		return transport.Result{}, t.ctxErr(ctx, err)
	}
	payload, err := TaskPayload([]any{argv, in, timeoutSecs, t.maxOutput()}, nil)
	if err != nil {
		return transport.Result{}, err
	}
	resp, err := t.Client.Submit(ctx, t.Endpoint, SubmitRequest{
		Tasks: map[string][]string{fid: {payload}}, ResultSerializers: []string{JSONDataPath},
	})
	if err != nil {
		return transport.Result{}, t.ctxErr(ctx, t.siteErr(err))
	}
	ids := resp.Tasks[fid]
	if len(ids) != 1 {
		return transport.Result{}, fmt.Errorf("globus compute submit returned %d task ids for one task", len(ids))
	}
	t.log().Debug("globus task submitted", "endpoint", t.Endpoint, "task", ids[0], "cmd", argv[0])
	// From here on the endpoint has the task: whatever fails, the command may have run
	// (an sbatch may have queued a job), so the caller must look before repeating it.
	st, err := t.wait(ctx, ids[0])
	if err != nil {
		return transport.Result{}, errs.Mark(t.ctxErr(ctx, err), errs.ErrOutcomeUnknown, errs.ErrTransient)
	}
	res, err := t.decode(st)
	if err != nil {
		return transport.Result{}, errs.Mark(err, errs.ErrOutcomeUnknown)
	}
	br.Reset()
	res.Duration = time.Since(start)
	return res, nil
}

// ctxErr turns a deadline into transport.ErrTimeout (still a context.DeadlineExceeded,
// as the other transports' timeouts are).
func (t *Transport) ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(context.Cause(ctx), transport.ErrTimeout) {
		return fmt.Errorf("globus endpoint %s: %w after %s (%w)", t.Endpoint, transport.ErrTimeout, t.timeout(), context.DeadlineExceeded)
	}
	return err
}

// siteErr trips the breaker on errors meaning the site is down.
func (t *Transport) siteErr(err error) error {
	if errors.Is(err, errs.ErrSiteDown) {
		t.breaker().Trip(err.Error())
	}
	return err
}

// ensureOnline checks GET /v2/endpoints/{id}/status unless a recent check said online.
func (t *Transport) ensureOnline(ctx context.Context, force bool) error {
	ttl := t.StatusTTL
	if ttl <= 0 {
		ttl = 30 * time.Second
	}
	t.mu.Lock()
	fresh := !force && time.Since(t.lastOnline) < ttl
	t.mu.Unlock()
	if fresh {
		return nil
	}
	st, err := t.Client.EndpointStatus(ctx, t.Endpoint)
	if err != nil {
		return t.siteErr(err)
	}
	if !strings.EqualFold(st.Status, "online") {
		reason := fmt.Sprintf("Globus Compute endpoint %s is %s; on its login node run `~/.gce-venv/bin/globus-compute-endpoint start --detach mosaic` (or `mosaic endpoint-setup HOST`)", t.Endpoint, orUnknown(st.Status))
		t.breaker().Trip(reason)
		return fmt.Errorf("%s: %w", reason, errs.ErrSiteDown)
	}
	t.mu.Lock()
	t.lastOnline = time.Now()
	t.mu.Unlock()
	return nil
}

func orUnknown(s string) string {
	if s == "" {
		return "in an unknown state"
	}
	return s
}

// wait polls batch_status until the task is terminal, re-checking the endpoint when
// a task sits pending (tasks wait silently for an offline endpoint, globus-compute#444).
func (t *Transport) wait(ctx context.Context, id string) (TaskStatus, error) {
	var delay time.Duration
	lastCheck := time.Now()
	for {
		delay = t.Poll.next(delay)
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return TaskStatus{}, ctx.Err()
		case <-timer.C:
		}
		res, err := t.Client.batchStatus(ctx, []string{id}, int64(t.maxResult())+64<<10)
		if err != nil {
			return TaskStatus{}, t.siteErr(err)
		}
		st, ok := res[id]
		if ok && st.Terminal() {
			if st.TaskID != "" && st.TaskID != id {
				return TaskStatus{}, fmt.Errorf("globus compute returned task %s for %s", st.TaskID, id)
			}
			return st, nil
		}
		pc := t.PendingCheck
		if pc <= 0 {
			pc = 10 * time.Second
		}
		if time.Since(lastCheck) > pc {
			lastCheck = time.Now()
			if err := t.ensureOnline(ctx, true); err != nil {
				return TaskStatus{}, err
			}
		}
	}
}

// decode turns a terminal task into a Result.
func (t *Transport) decode(st TaskStatus) (transport.Result, error) {
	if !strings.EqualFold(st.Status, "success") || st.Result == nil {
		msg := st.Reason
		if st.Exception != nil {
			msg = lastLine(*st.Exception)
		}
		return transport.Result{}, fmt.Errorf("%w on endpoint %s: %s", ErrTaskFailed, t.Endpoint, orUnknown(msg))
	}
	if len(*st.Result) > t.maxResult() {
		return transport.Result{}, fmt.Errorf("endpoint %s task %s: %d-byte result: %w", t.Endpoint, st.TaskID, len(*st.Result), ErrResultTooLarge)
	}
	var sr shellResult
	if err := DeserializeJSON(*st.Result, &sr); err != nil {
		return transport.Result{}, fmt.Errorf("endpoint %s task %s: %w", t.Endpoint, st.TaskID, err)
	}
	res := transport.Result{ExitCode: sr.ReturnCode}
	for _, p := range []struct {
		in  string
		out *[]byte
	}{{sr.Stdout, &res.Stdout}, {sr.Stderr, &res.Stderr}} {
		if sr.Encoding == "base64" {
			b, err := base64.StdEncoding.DecodeString(p.in)
			if err != nil {
				return transport.Result{}, fmt.Errorf("endpoint %s task %s: output is not base64: %w", t.Endpoint, st.TaskID, err)
			}
			*p.out = b
		} else {
			*p.out = []byte(p.in)
		}
	}
	if sr.Truncated || len(res.Stdout)+len(res.Stderr) > t.maxOutput() {
		return transport.Result{}, fmt.Errorf("endpoint %s: %w", t.Endpoint, transport.ErrOutputTooLarge)
	}
	return res, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if len(l) > 500 {
		l = l[:500]
	}
	return l
}

// functions caches registered function ids per client and content hash.
type functions struct {
	mu  sync.Mutex
	ids map[string]string
}

// function returns the id of the registered shell function, registering it once
// per content hash.
func (c *Client) function(ctx context.Context) (string, error) {
	c.fnOnce.Do(func() { c.fns = &functions{ids: map[string]string{}} })
	c.fns.mu.Lock()
	defer c.fns.mu.Unlock()
	h := FunctionHash()
	if id, ok := c.fns.ids[h]; ok {
		return id, nil
	}
	id, err := c.RegisterFunction(ctx, RegisterFunctionRequest{
		FunctionName: FunctionName, FunctionCode: FunctionCode(),
		Meta:        FunctionMeta{PythonVersion: "3", SDKVersion: "mosaic", SerdeIdentifier: strings.TrimSpace(PureSourceTextInspectID)},
		Description: "Mosaic: run one command on the login node (sha256 " + h[:12] + ")",
	})
	if err != nil {
		return "", fmt.Errorf("registering Mosaic's shell function: %w", err)
	}
	c.fns.ids[h] = id
	return id, nil
}
