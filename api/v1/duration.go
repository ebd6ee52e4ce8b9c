package v1

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration is a length of time. It travels as a compact Go duration string ("48h",
// "1h30m", "45s", "0s"); decoding also accepts a number of seconds. The core accepts
// more forms on input (Slurm "D-HH:MM:SS", "2d", plain minutes); it always answers
// with this one.
type Duration time.Duration

// D returns the standard library duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String renders the shortest Go duration ("48h", "1h30m", "45s").
func (d Duration) String() string {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// MarshalJSON writes the String form.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a Go duration string or a number of seconds; null leaves d as is.
func (d *Duration) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" {
		return nil
	}
	if strings.HasPrefix(s, `"`) {
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return err
		}
		v, err := time.ParseDuration(strings.TrimSpace(str))
		if err != nil {
			return fmt.Errorf("duration %q: want a Go duration such as \"1h30m\": %w", str, err)
		}
		*d = Duration(v)
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("duration %s: want a string like \"2h\" or a number of seconds", s)
	}
	ns := f * float64(time.Second)
	if ns != ns || ns >= float64(math.MaxInt64) || ns < float64(math.MinInt64) {
		return fmt.Errorf("duration %s seconds does not fit in a time.Duration", s)
	}
	*d = Duration(ns)
	return nil
}
