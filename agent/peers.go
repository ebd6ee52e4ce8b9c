package agent

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
)

// MissingPeersError says which peers never registered.
type MissingPeersError struct {
	RunID    string
	Exchange string
	Waited   time.Duration
	Missing  []EntityID // never ACTIVE
	Gone     []EntityID // already terminated
}

// Error names every missing peer with its uid and what to check.
func (e *MissingPeersError) Error() string {
	var b strings.Builder
	if len(e.Missing) > 0 {
		fmt.Fprintf(&b, "peers not registered on exchange %s after %s: ", e.Exchange, e.Waited.Round(time.Millisecond))
		b.WriteString(list(e.Missing))
	}
	if len(e.Gone) > 0 {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString("peers already terminated: " + list(e.Gone))
	}
	fmt.Fprintf(&b, ". Check that every site uses run id %q (the uid is UUIDv5 of \"<run>/<name>\"), that %s points at the same exchange, and that %s is valid for this run; a site that failed to start also shows up here",
		e.RunID, EnvExchangeURL, EnvExchangeToken)
	return b.String()
}

func list(ids []EntityID) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("%s (uid %s)", id.NameOr("?"), id.UID)
	}
	return strings.Join(parts, ", ")
}

// WaitForPeers polls the exchange until the mailboxes of the named agents of run
// are ACTIVE, and returns their ids by name. Ids are deterministic, so no
// discovery by class is needed. It fails fast when a peer is already terminated
// and returns *MissingPeersError after timeout. poll <= 0 means 500 ms.
func (c *Client) WaitForPeers(ctx context.Context, runID string, names []string, timeout, poll time.Duration) (map[string]EntityID, error) {
	if poll <= 0 {
		poll = 500 * time.Millisecond
	}
	start := time.Now()
	want := map[string]EntityID{}
	for _, n := range names {
		want[n] = AgentID(runID, n)
	}
	found := map[string]EntityID{}
	// Bounded by timeout (and ctx): one status call per missing peer per poll.
	for {
		var gone []EntityID
		for n, id := range want {
			if _, ok := found[n]; ok {
				continue
			}
			st, err := c.Status(ctx, id)
			if err != nil {
				return found, fmt.Errorf("wait for peer %s: %w", n, err)
			}
			switch st {
			case StatusActive:
				found[n] = id
			case StatusTerminated:
				gone = append(gone, id)
			}
		}
		if len(found) == len(want) {
			return found, nil
		}
		timedOut := timeout > 0 && time.Since(start) >= timeout
		if len(gone) > 0 || timedOut {
			e := &MissingPeersError{RunID: runID, Exchange: c.base, Waited: time.Since(start), Gone: gone}
			for n, id := range want {
				if _, ok := found[n]; !ok && !contains(gone, id) {
					e.Missing = append(e.Missing, id)
				}
			}
			sortIDs(e.Missing)
			sortIDs(e.Gone)
			return found, e
		}
		wait := poll
		if timeout > 0 {
			wait = min(wait, timeout-time.Since(start))
		}
		t := time.NewTimer(max(wait, 0))
		select {
		case <-ctx.Done():
			t.Stop()
			return found, fmt.Errorf("wait for peers: %w", ctx.Err())
		case <-t.C:
		}
	}
}

func contains(ids []EntityID, id EntityID) bool {
	for _, x := range ids {
		if x.UID == id.UID {
			return true
		}
	}
	return false
}

func sortIDs(ids []EntityID) {
	sort.Slice(ids, func(i, j int) bool { return ids[i].NameOr("") < ids[j].NameOr("") })
}
