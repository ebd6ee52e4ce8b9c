package globus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/errs"
)

// DefaultComputeURL is the Globus Compute web service
// (compute_sdk/globus_compute_sdk/sdk/_environments.py).
const DefaultComputeURL = "https://compute.api.globus.org"

// EnvComputeURL overrides DefaultComputeURL.
const EnvComputeURL = "MOSAIC_GLOBUS_COMPUTE_URL"

// maxAPIResponse bounds non-result API bodies.
const maxAPIResponse = 4 << 20

// TokenSource yields a Globus Compute access token (auth.Resolver implements it).
type TokenSource interface {
	AccessToken(ctx context.Context) (string, error)
}

// Client calls the Globus Compute web service. Routes and bodies follow
// compute_sdk/globus_compute_sdk/sdk/web_client.py and sdk/batch.py.
type Client struct {
	BaseURL string
	Tokens  TokenSource
	HTTP    *http.Client
	// MaxResponse caps one response body other than batch status; 0 means 4 MiB.
	MaxResponse int64

	fnOnce sync.Once
	fns    *functions
}

// APIError is a non-2xx answer from Globus Compute.
type APIError struct {
	Status  int
	Code    string
	Message string
	Path    string
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("globus compute %s: HTTP %d", e.Path, e.Status)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden && strings.Contains(strings.ToLower(e.Code), "auth") {
		s += "; run `mosaic login` (or sign in again in the web UI)"
	}
	return s
}

// Unwrap maps 401 to errs.ErrNeedsLogin.
func (e *APIError) Unwrap() error {
	if e.Status == http.StatusUnauthorized {
		return errs.ErrNeedsLogin
	}
	return nil
}

// ErrServiceUnreachable wraps (with errs.ErrSiteDown) failures to reach the web service.
var ErrServiceUnreachable = errors.New("globus compute service unreachable")

func (c *Client) base() string {
	if c.BaseURL == "" {
		return DefaultComputeURL
	}
	return strings.TrimRight(c.BaseURL, "/")
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	return c.doLimit(ctx, method, path, in, out, 0)
}

// doLimit is do with a response size limit (0: MaxResponse).
func (c *Client) doLimit(ctx context.Context, method, path string, in, out any, limit int64) error {
	var payload []byte
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		payload = b
	}
	if c.Tokens == nil {
		return fmt.Errorf("globus compute: no credentials configured: %w", errs.ErrNeedsLogin)
	}
	err := c.attempt(ctx, method, path, payload, out, limit)
	var api *APIError
	if errors.As(err, &api) && api.Status == http.StatusUnauthorized {
		// Drop cached tokens and try once more: a service identity gets a fresh
		// grant; a dead login fails again with its message.
		if inv, ok := c.Tokens.(interface{ Invalidate() }); ok {
			inv.Invalidate()
			err = c.attempt(ctx, method, path, payload, out, limit)
		}
	}
	return err
}

func (c *Client) attempt(ctx context.Context, method, path string, payload []byte, out any, limit int64) error {
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base()+path, body)
	if err != nil {
		return err
	}
	tok, err := c.Tokens.AccessToken(ctx)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "application/json")
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: time.Minute}
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("globus compute %s: %w: %w: %w", path, ErrServiceUnreachable, errs.ErrSiteDown, err)
	}
	defer resp.Body.Close()
	if limit <= 0 {
		limit = c.MaxResponse
	}
	if limit <= 0 {
		limit = maxAPIResponse
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return fmt.Errorf("globus compute %s: %w: %w", path, errs.ErrSiteDown, err)
	}
	if int64(len(data)) > limit {
		return fmt.Errorf("globus compute %s: response over %d bytes: %w", path, limit, ErrResultTooLarge)
	}
	if resp.StatusCode/100 != 2 {
		e := &APIError{Status: resp.StatusCode, Path: path}
		var m struct {
			Code   string `json:"code"`
			Error  string `json:"error"`
			Reason string `json:"reason"`
			Msg    string `json:"message"`
		}
		if json.Unmarshal(data, &m) == nil {
			e.Code = m.Code
			e.Message = firstNonEmpty(m.Msg, m.Reason, m.Error)
		}
		if e.Message == "" && len(data) < 300 {
			e.Message = strings.TrimSpace(string(data))
		}
		if resp.StatusCode >= 500 {
			return fmt.Errorf("%w: %w", e, errs.ErrSiteDown)
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("globus compute %s: unexpected response: %w", path, err)
	}
	return nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// FunctionMeta is FunctionRegistrationMetadata.to_dict (sdk/web_client.py).
type FunctionMeta struct {
	PythonVersion   string `json:"python_version"`
	SDKVersion      string `json:"sdk_version"`
	SerdeIdentifier string `json:"serde_identifier"`
}

// RegisterFunctionRequest is FunctionRegistrationData.to_dict (sdk/web_client.py).
type RegisterFunctionRequest struct {
	FunctionName string       `json:"function_name"`
	FunctionCode string       `json:"function_code"`
	Meta         FunctionMeta `json:"meta"`
	Description  string       `json:"description,omitempty"`
}

// RegisterFunction is POST /v3/functions → {"function_uuid"} (client.py register_function).
func (c *Client) RegisterFunction(ctx context.Context, r RegisterFunctionRequest) (string, error) {
	var out struct {
		FunctionUUID string `json:"function_uuid"`
	}
	if err := c.do(ctx, http.MethodPost, "/v3/functions", r, &out); err != nil {
		return "", err
	}
	if out.FunctionUUID == "" {
		return "", errors.New("globus compute: function registration returned no function_uuid")
	}
	return out.FunctionUUID, nil
}

// SubmitRequest is Batch.prepare() (sdk/batch.py).
type SubmitRequest struct {
	CreateQueue       bool                `json:"create_queue"`
	Tasks             map[string][]string `json:"tasks"`
	TaskGroupID       string              `json:"task_group_id,omitempty"`
	UserRuntime       map[string]string   `json:"user_runtime,omitempty"`
	ResultSerializers []string            `json:"result_serializers,omitempty"`
}

// SubmitResponse is batch_run's answer (sdk/client.py batch_run docstring).
type SubmitResponse struct {
	Tasks       map[string][]string `json:"tasks"`
	RequestID   string              `json:"request_id"`
	TaskGroupID string              `json:"task_group_id"`
	EndpointID  string              `json:"endpoint_id"`
}

// Submit is POST /v3/endpoints/{id}/submit (web_client.py submit).
func (c *Client) Submit(ctx context.Context, endpoint string, r SubmitRequest) (SubmitResponse, error) {
	var out SubmitResponse
	err := c.do(ctx, http.MethodPost, "/v3/endpoints/"+endpoint+"/submit", r, &out)
	return out, err
}

// TaskStatus is one task's record (client.py _update_task_table): status is pending
// until "success" or "failed"; then result, exception or reason.
type TaskStatus struct {
	TaskID      string          `json:"task_id"`
	Status      string          `json:"status"`
	Result      *string         `json:"result,omitempty"`
	Exception   *string         `json:"exception,omitempty"`
	Reason      string          `json:"reason,omitempty"`
	CompletionT json.RawMessage `json:"completion_t,omitempty"`
}

// Terminal reports whether the task finished ("success" or "failed").
func (s TaskStatus) Terminal() bool {
	st := strings.ToLower(s.Status)
	return st == "success" || st == "failed"
}

// BatchStatus is POST /v2/batch_status {"task_ids"} → {"response": "batch",
// "results": {id: TaskStatus}} (web_client.py get_batch_status, client.py get_batch_result).
func (c *Client) BatchStatus(ctx context.Context, ids []string) (map[string]TaskStatus, error) {
	return c.batchStatus(ctx, ids, int64(DefaultMaxResult)*int64(max(1, len(ids))))
}

func (c *Client) batchStatus(ctx context.Context, ids []string, limit int64) (map[string]TaskStatus, error) {
	var out struct {
		Results map[string]TaskStatus `json:"results"`
	}
	if err := c.doLimit(ctx, http.MethodPost, "/v2/batch_status", map[string][]string{"task_ids": ids}, &out, limit); err != nil {
		return nil, err
	}
	return out.Results, nil
}

// EndpointStatus is GET /v2/endpoints/{id}/status ("status": "online" means up).
type EndpointStatus struct {
	Status  string         `json:"status"`
	Details map[string]any `json:"details,omitempty"`
}

// EndpointStatus asks whether an endpoint is connected.
func (c *Client) EndpointStatus(ctx context.Context, endpoint string) (EndpointStatus, error) {
	var out EndpointStatus
	err := c.do(ctx, http.MethodGet, "/v2/endpoints/"+endpoint+"/status", nil, &out)
	return out, err
}

// Endpoint is one entry of GET /v2/endpoints ({uuid, name, display_name, owner}) plus
// the metadata of GET /v2/endpoints/{id} (hostname, status).
type Endpoint struct {
	UUID        string `json:"uuid"`
	Name        string `json:"name"`
	DisplayName string `json:"display_name,omitempty"`
	Owner       string `json:"owner,omitempty"`
	Hostname    string `json:"hostname,omitempty"`
	Status      string `json:"status,omitempty"`
}

// Endpoints is GET /v2/endpoints: the endpoints the user owns (client.py get_endpoints).
func (c *Client) Endpoints(ctx context.Context) ([]Endpoint, error) {
	var out []Endpoint
	err := c.do(ctx, http.MethodGet, "/v2/endpoints", nil, &out)
	return out, err
}

// EndpointMetadata is GET /v2/endpoints/{id} (client.py get_endpoint_metadata: "IP,
// hostname, and configuration values"); hostname may sit at top level or in metadata.
func (c *Client) EndpointMetadata(ctx context.Context, endpoint string) (Endpoint, error) {
	var raw struct {
		Endpoint
		Metadata struct {
			Hostname string `json:"hostname"`
		} `json:"metadata"`
	}
	if err := c.do(ctx, http.MethodGet, "/v2/endpoints/"+endpoint, nil, &raw); err != nil {
		return Endpoint{}, err
	}
	e := raw.Endpoint
	if e.Hostname == "" {
		e.Hostname = raw.Metadata.Hostname
	}
	if e.UUID == "" {
		e.UUID = endpoint
	}
	return e, nil
}
