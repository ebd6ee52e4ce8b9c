package client

import "testing"

// TestNewBoundsRequestsByRequestTimeout: a client's requests (not its event streams)
// give up after RequestTimeout, which the MCP tests keep above the core's own bounds
// (internal/mcp TestClientOutwaitsTheCoresBounds).
func TestNewBoundsRequestsByRequestTimeout(t *testing.T) {
	c, err := New("http://127.0.0.1:8642", "tok")
	if err != nil {
		t.Fatal(err)
	}
	if c.http.Timeout != RequestTimeout {
		t.Fatalf("request timeout %s, want RequestTimeout (%s)", c.http.Timeout, RequestTimeout)
	}
}
