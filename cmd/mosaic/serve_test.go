package main

import (
	"strings"
	"testing"
)

func TestCheckAdvertise(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{
		{"http://10.0.0.5:8642", true},
		{"https://mosaic-2.example.org", true},
		{"http://127.0.0.1:8642/", true},
		{"10.0.0.5:8642", false},
		{"ftp://10.0.0.5", false},
		{"http://", false},
		{"http://h:1/api", false},
		{"http://h:1?x=1", false},
		{"http://h :1", false},
		{"", false},
	} {
		err := checkAdvertise(c.in)
		if (err == nil) != c.ok {
			t.Errorf("checkAdvertise(%q) = %v, want ok=%v", c.in, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "--advertise") {
			t.Errorf("checkAdvertise(%q): %v does not name the flag", c.in, err)
		}
	}
}

func FuzzCheckAdvertise(f *testing.F) {
	for _, s := range []string{"http://10.0.0.5:8642", "https://h", "http://h/x", "h:1", "http://[::1]:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if checkAdvertise(s) == nil && !strings.HasPrefix(s, "http://") && !strings.HasPrefix(s, "https://") {
			t.Fatalf("accepted %q", s)
		}
	})
}
