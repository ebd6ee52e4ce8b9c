package term

import (
	"bytes"
	"os"
	"testing"
)

func TestColor(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "NO_COLOR" {
				return v
			}
			return ""
		}
	}
	var buf bytes.Buffer
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	for _, c := range []struct {
		name  string
		w     any
		mode  string
		noCol string
		want  bool
	}{
		{"never", &buf, Never, "", false},
		{"always, even with NO_COLOR, on a buffer", &buf, Always, "1", true},
		{"auto on a buffer", &buf, Auto, "", false},
		{"auto on a file that is not a terminal", devnull, Auto, "", false},
		{"auto, NO_COLOR set", devnull, Auto, "1", false},
	} {
		w := c.w.(interface{ Write([]byte) (int, error) })
		if got := Color(w, c.mode, env(c.noCol)); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// A pseudo-terminal is a terminal (NO_COLOR empty counts as unset).
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		if !Color(tty, Auto, env("")) {
			t.Errorf("auto on /dev/tty with NO_COLOR empty: no colour")
		}
		if Color(tty, Auto, env("1")) {
			t.Errorf("auto on /dev/tty with NO_COLOR=1: colour")
		}
	}
}

func TestParseModeAndPaint(t *testing.T) {
	for in, want := range map[string]string{"": Auto, "auto": Auto, "always": Always, "never": Never} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseMode("yes"); err == nil {
		t.Error("ParseMode(yes) accepted")
	}
	if Paint(false, "31", "x") != "x" || Paint(true, "31", "x") != "\x1b[31mx\x1b[0m" {
		t.Error("Paint")
	}
}
