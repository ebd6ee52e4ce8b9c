package slurm

import (
	"strconv"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// splitDelimited splits one '|'-delimited line into exactly n fields. Slurm's -O format
// with a '|' suffix leaves one trailing delimiter, which is dropped. ok is false when the
// line has fewer fields. When it has more, the extra '|' are assumed to belong to field
// free (a user-chosen name) and are rejoined there; free < 0 means extras are an error.
func splitDelimited(line string, n, free int) ([]string, bool) {
	f := strings.Split(line, "|")
	if len(f) == n+1 && f[n] == "" {
		f = f[:n]
	}
	if len(f) == n {
		return f, true
	}
	if len(f) < n || free < 0 {
		return nil, false
	}
	extra := len(f) - n
	if f[len(f)-1] == "" { // trailing delimiter
		extra--
		f = f[:len(f)-1]
	}
	if extra == 0 {
		return f, len(f) == n
	}
	joined := strings.Join(f[free:free+extra+1], "|")
	out := append(append(append([]string{}, f[:free]...), joined), f[free+extra+1:]...)
	return out, len(out) == n
}

// lines splits output into non-empty lines without trailing '\r'.
func lines(b []byte) []string {
	raw := strings.Split(string(b), "\n")
	out := raw[:0]
	for _, l := range raw {
		l = strings.TrimRight(l, "\r")
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// parseTime reads Slurm timestamps ("2026-11-30T03:39:08"); "Unknown", "None", "N/A"
// and empty give the zero time.
func parseTime(s string, loc *time.Location) time.Time {
	s = strings.TrimSpace(s)
	switch s {
	case "", "Unknown", "None", "N/A", "n/a":
		return time.Time{}
	}
	if loc == nil {
		loc = time.Local
	}
	t, err := time.ParseInLocation("2006-01-02T15:04:05", s, loc)
	if err != nil {
		return time.Time{}
	}
	return t
}

// parseLimit reads a time limit: "UNLIMITED"/"infinite"/"n/a" → 0.
func parseLimit(s string) (model.Duration, bool) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "unlimited", "infinite", "n/a", "none", "":
		return 0, true
	}
	d, err := model.ParseSiteDuration(s) // a site may report more than a user may ask; overflow is refused
	if err != nil {
		return 0, false
	}
	return d, true
}

func atoiDefault(s string, def int) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return def
	}
	return n
}

// cleanNull turns Slurm's "(null)", "N/A", "None" and "None assigned" into "".
func cleanNull(s string) string {
	switch s = strings.TrimSpace(s); s {
	case "(null)", "N/A", "None", "None assigned", "n/a":
		return ""
	}
	return s
}
