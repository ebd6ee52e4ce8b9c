package model

import (
	"strings"
	"testing"
)

// TestCheckLineAndText is finding 7: lengths are counted in characters, and NUL and
// control characters are refused (newline and tab only in multi-line text).
func TestCheckLineAndText(t *testing.T) {
	euro43, euro129 := strings.Repeat("€", 43), strings.Repeat("€", 129)
	cases := []struct {
		name      string
		s         string
		multiline bool
		max       int
		want      string // "" = accepted
	}{
		{"43 euro signs are 43 characters", euro43, false, 128, ""},
		{"129 euro signs", euro129, false, 128, "is 129 characters; at most 128"},
		{"128 ascii", strings.Repeat("a", 128), false, 128, ""},
		{"129 ascii", strings.Repeat("a", 129), false, 128, "is 129 characters"},
		{"emoji count once", strings.Repeat("🚀", 128), false, 128, ""},
		{"no limit", strings.Repeat("a", 10000), false, 0, ""},
		{"NUL", "a\x00b", false, 0, "NUL byte (character 2)"},
		{"NUL in text", "echo a\x00", true, 0, "NUL byte"},
		{"newline in line", "a\nb", false, 0, "newline"},
		{"newline in text", "a\nb", true, 0, ""},
		{"tab in line", "a\tb", false, 0, "control character U+0009"},
		{"tab in text", "a\tb", true, 0, ""},
		{"CR in line", "a\rb", false, 0, "carriage return"},
		{"CR in text", "a\r\nb", true, 0, "dos2unix"},
		{"escape", "\x1b[2J", true, 0, "U+001B"},
		{"bell", "a\x07", false, 0, "U+0007"},
		{"DEL", "a\x7f", true, 0, "U+007F"},
		{"C1 NEL", "a\u0085", true, 0, "U+0085"},
		{"C1 CSI", "a\u009b", false, 0, "U+009B"},
		{"bidi override", "a\u202eb", true, 0, "bidirectional"},
		{"bidi isolate", "a\u2066b", false, 0, "bidirectional"},
		{"line separator", "a\u2028b", false, 0, "U+2028"},
		{"invalid utf-8", "a\xff", true, 0, "not valid UTF-8"},
		{"truncated utf-8", "\xe2\x82", false, 0, "not valid UTF-8"},
		{"plain unicode", "Modèle 東京 ÿ", false, 0, ""},
		{"empty", "", false, 10, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			check := CheckLine
			if tc.multiline {
				check = CheckText
			}
			err := check("field", tc.s, tc.max)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("accepted, want an error containing %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %q does not contain %q", err, tc.want)
			case err != nil && !strings.HasPrefix(err.Error(), "field "):
				t.Fatalf("error %q does not start with the field name", err)
			}
		})
	}
	if err := CheckName("  "); err == nil {
		t.Error("a blank name was accepted")
	}
	if err := CheckName(euro43); err != nil {
		t.Errorf("43 euro signs refused: %v", err)
	}
}

// TestJobSpecValidateRefusesControlCharacters: JobSpec.Validate, which every provider
// and renderer calls, refuses control characters in each field that reaches a script.
func TestJobSpecValidateRefusesControlCharacters(t *testing.T) {
	base := func() JobSpec {
		return JobSpec{Tag: "mosaic-x-1", Name: "n", Partition: "p", Nodes: 1, Walltime: 60e9, Command: "echo\tok\n"}
	}
	if sp := base(); sp.Validate() != nil {
		t.Fatalf("base spec refused: %v", sp.Validate())
	}
	for name, mod := range map[string]func(*JobSpec){
		"name":      func(s *JobSpec) { s.Name = "a\nb" },
		"command":   func(s *JobSpec) { s.Command = "a\x00" },
		"script":    func(s *JobSpec) { s.Script = "a\x1b" },
		"account":   func(s *JobSpec) { s.Account = "a\n" },
		"partition": func(s *JobSpec) { s.Partition = "a\r" },
		"workdir":   func(s *JobSpec) { s.WorkDir = "/a\x00" },
		"gpu_model": func(s *JobSpec) { s.GPUModel = "A\n" },
		"system":    func(s *JobSpec) { s.System = "s\n" },
		"tag":       func(s *JobSpec) { s.Tag = "t\n" },
		"env name":  func(s *JobSpec) { s.Env = map[string]string{"A\n": "1"} },
		"env value": func(s *JobSpec) { s.Env = map[string]string{"A": "\x00"} },
		"image":     func(s *JobSpec) { s.Container = &Container{Image: "i\n"} },
		"runtime":   func(s *JobSpec) { s.Container = &Container{Image: "i", Runtime: "apptainer\n"} },
	} {
		sp := base()
		mod(&sp)
		if err := sp.Validate(); err == nil {
			t.Errorf("%s: a control character was accepted", name)
		}
	}
}

// TestEnvelopeRefusesControlCharacters: envelope strings that reach a script or a
// terminal are checked too.
func TestEnvelopeRefusesControlCharacters(t *testing.T) {
	for field, mod := range map[string]func(*Envelope){
		"constraints.container.image": func(e *Envelope) { e.Constraints.Container = &Container{Image: "x.sif\nid"} },
		"constraints.features":        func(e *Envelope) { e.Constraints.Features = []string{"nvme\x00"} },
		"constraints.avoid_systems":   func(e *Envelope) { e.Constraints.AvoidSystems = []string{"a\nb"} },
		"rationale":                   func(e *Envelope) { e.Rationale = "because\x1b[2J" },
	} {
		e := validEnv()
		mod(&e)
		err := e.Validate()
		if err == nil || !strings.Contains(err.Error(), "envelope field "+field+":") {
			t.Errorf("%s: %v", field, err)
		}
	}
}
