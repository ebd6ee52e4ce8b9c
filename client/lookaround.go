package client

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"unicode/utf8"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
)

// Look-around types (aliases of the api/v1 wire types).
type (
	SiteEnv    = v1.SiteEnv
	ExecResult = v1.ExecResult
)

// SystemEnv probes a system's login node.
func (c *Client) SystemEnv(ctx context.Context, system string) (*SiteEnv, error) {
	var e SiteEnv
	return &e, c.do(ctx, http.MethodGet, "/api/resources/"+url.PathEscape(system)+"/env", nil, nil, &e)
}

// Exec runs one read-only look-around command on a system's login node.
func (c *Client) Exec(ctx context.Context, system, command string) (*ExecResult, error) {
	var r ExecResult
	return &r, c.do(ctx, http.MethodPost, "/api/resources/"+url.PathEscape(system)+"/exec", nil,
		map[string]string{"command": command}, &r)
}

// PutFile stages data at path inside the system's workdir and returns the site path.
func (c *Client) PutFile(ctx context.Context, system, path string, data []byte) (string, error) {
	body := map[string]string{"path": path}
	if utf8.Valid(data) && !bytes.ContainsRune(data, 0) {
		body["content"] = string(data)
	} else {
		body["content_base64"] = base64.StdEncoding.EncodeToString(data)
	}
	var out struct {
		Path string `json:"path"`
	}
	err := c.do(ctx, http.MethodPost, "/api/resources/"+url.PathEscape(system)+"/files", nil, body, &out)
	return out.Path, err
}
