package client

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestParseStream: well-formed streams deliver the ready position and the events;
// malformed messages are errors naming the stream, never silently skipped events.
func TestParseStream(t *testing.T) {
	ev := func(id int) string {
		return "id: " + strconv.Itoa(id) + "\nevent: event\ndata: {\"id\":" + strconv.Itoa(id) + ",\"kind\":\"dispatch\",\"message\":\"m\"}\n\n"
	}
	cases := []struct {
		name   string
		in     string
		ready  []int64
		events []int64
		err    string // "" = the stream just ended
	}{
		{"ready then events", "id: 7\nretry: 1000\nevent: ready\ndata: {\"last_id\":7}\n\n" + ev(8) + ev(9), []int64{7}, []int64{8, 9}, ""},
		{"comments and pings", ": keep-alive\n\nevent: ping\ndata: {\"time\":\"2026-01-01T00:00:00Z\"}\n\n" + ev(3), nil, []int64{3}, ""},
		{"no space after colon", "id:5\nevent:event\ndata:{\"id\":5}\n\n", nil, []int64{5}, ""},
		{"unterminated last message", ev(1) + "id: 2\nevent: event\ndata: {\"id\":2}", nil, []int64{1}, ""},
		{"unknown event type", "event: surprise\ndata: {}\n\n" + ev(4), nil, []int64{4}, ""},
		{"bad event JSON", "id: 1\nevent: event\ndata: {\"id\":\n\n", nil, nil, "event stream"},
		{"event with a string id", "event: event\ndata: {\"id\":\"x\"}\n\n", nil, nil, "event stream"},
		{"id line disagrees", "id: 5\nevent: event\ndata: {\"id\":6}\n\n", nil, nil, "message id 5 carries event 6"},
		{"bad ready", "event: ready\ndata: nope\n\n", nil, nil, "bad ready"},
		{"server error", "event: error\ndata: {\"error\":\"task \\\"x\\\": not found\"}\n\n", nil, nil, "not found"},
		{"garbage id ignored", "id: abc\nevent: event\ndata: {\"id\":2}\n\n", nil, []int64{2}, ""},
		{"empty", "", nil, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ready, events []int64
			err := parseStream(strings.NewReader(c.in), func(id int64) { ready = append(ready, id) }, func(e Event) error {
				events = append(events, e.ID)
				return nil
			})
			if c.err == "" && !errors.Is(err, errStreamEnded) {
				t.Fatalf("want the stream to end, got %v", err)
			}
			if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Fatalf("want an error with %q, got %v", c.err, err)
			}
			if !slices.Equal(ready, c.ready) || !slices.Equal(events, c.events) {
				t.Fatalf("ready %v events %v, want %v %v", ready, events, c.ready, c.events)
			}
		})
	}
}

// FuzzParseStream: any byte stream ends in an error or the end of the stream, without
// panicking, and every delivered event carries the id its message said.
func FuzzParseStream(f *testing.F) {
	f.Add("id: 7\nevent: ready\ndata: {\"last_id\":7}\n\nid: 8\nevent: event\ndata: {\"id\":8}\n\n")
	f.Add("event: event\ndata: {\"id\":\n\n")
	f.Add(": c\n\n\n\nid:\nevent:\ndata:\n\n")
	f.Fuzz(func(t *testing.T, in string) {
		_ = parseStream(strings.NewReader(in), func(int64) {}, func(Event) error { return nil })
	})
}
