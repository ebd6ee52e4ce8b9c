package campaign

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const goodJSONC = `// A campaign with comments
{
  /* block comment */
  "name": "demo",
  "initial_agent": "planner",
  "user_task": "plan things",
  "agents": [
    {
      "name": "planner",
      "command": ["python3", "planner.py", "--fast"],
      "allowed_peers": ["worker"],
      "env": {"MODEL": "none"},
      "site": "aurora",
      "envelope": {"cpu_cores": {"min": 2, "max": 4}, "walltime": {"min": "00:10:00", "max": "1:00:00"}},
    },
    {"name": "worker", "command": ["./worker"], "allowed_peers": ["planner"],},
  ],
  "exchange": {"backend": "redis", "redis_url": "redis://127.0.0.1:6379/0", "max_message_bytes": 2048, "discover_timeout": "5m"},
}
`

func TestParseGood(t *testing.T) {
	s, err := Parse([]byte(goodJSONC), "demo.jsonc")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(Strict); err != nil {
		t.Fatalf("valid campaign rejected: %v", err)
	}
	if s.Name != "demo" || s.InitialAgent != "planner" || s.UserTask != "plan things" || len(s.Agents) != 2 {
		t.Fatalf("parsed %+v", s.Campaign)
	}
	p := s.Agents[0]
	if strings.Join(p.Command, " ") != "python3 planner.py --fast" || p.Env["MODEL"] != "none" || p.Site != "aurora" ||
		p.Envelope == nil || p.Envelope.CPUCores.Max != 4 || p.Envelope.Walltime.Max.D() != time.Hour {
		t.Errorf("planner %+v", p)
	}
	x := s.Exchange
	if x.Backend != "redis" || x.RedisURL == "" || x.MaxMessageBytes != 2048 || x.DiscoverTimeout.D() != 5*time.Minute {
		t.Errorf("exchange %+v", x)
	}
	if got := s.Names(); strings.Join(got, ",") != "planner,worker" {
		t.Errorf("names %v", got)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.jsonc")
	if err := os.WriteFile(path, []byte(goodJSONC), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Load(path)
	if err != nil || s.Path != path {
		t.Fatalf("Load: %v %+v", err, s)
	}
	if _, err := Load(filepath.Join(dir, "missing.jsonc")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	big := filepath.Join(dir, "big.jsonc")
	if err := os.WriteFile(big, []byte(`{"name":"`+strings.Repeat("x", MaxFileBytes)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("big file: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		line     int
		want     string
	}{
		{"empty", ``, 1, "not valid JSONC"},
		{"not object", `["a"]`, 1, "one JSON object"},
		{"unterminated", "{\n\"name\": \"x\",\n", 3, "not valid JSONC"},
		{"bad token", "{\n  \"name\": nope\n}", 2, "not valid JSONC"},
		{"unknown top field", "{\n\"name\": \"x\",\n\"agnets\": []\n}", 3, `unknown field "agnets"`},
		{"unknown agent field", "{\"agents\": [\n {\"name\": \"a\",\n  \"allowed_peer\": [\"b\"]}\n]}", 3, `unknown field "allowed_peer"`},
		{"wrong type", "{\n\"name\": \"x\",\n\"agents\": [\n{\"name\": 7}]}", 4, "expected string"},
		{"command not list", "{\"agents\": [{\"name\": \"a\",\n\"command\": \"python3 a.py\"}]}", 2, "expected []string"},
		{"bad duration", `{"exchange": {"discover_timeout": "soon"}}`, 0, "soon"},
		{"two objects", "{}\n{}", 2, "after top-level value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in), "c.jsonc")
			if err == nil {
				t.Fatal("accepted")
			}
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("error %T %v is not a *SpecError", err, err)
			}
			if se.Line != tc.line || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "c.jsonc") {
				t.Errorf("got %q (line %d), want line %d containing %q", err, se.Line, tc.line, tc.want)
			}
		})
	}
}

// campaign builds a JSONC document from agent lines (one per agent).
func campaign(initial string, agents ...string) string {
	return "{\n\"name\": \"t\",\n\"initial_agent\": \"" + initial + "\",\n\"agents\": [\n" + strings.Join(agents, ",\n") + "\n]\n}"
}

func TestValidate(t *testing.T) {
	a := `{"name": "a", "command": ["a"], "allowed_peers": ["b"]}`
	b := `{"name": "b", "command": ["b"], "allowed_peers": ["a"]}`
	for _, tc := range []struct {
		name      string
		doc       string
		strict    string // "" = valid; else substring of the error
		federated string
		line      int // line of the first error, when checked
	}{
		{"valid", campaign("a", a, b), "", "", 0},
		{"initial missing", campaign("zed", a, b), `initial_agent "zed" is not declared`, "", 3},
		{"initial empty", campaign("", a, b), "initial_agent is empty", "initial_agent is empty", 3},
		{"peer on other site", campaign("a", a), `allows peer "b", which is not declared`, "", 5},
		{"self peer", campaign("a", `{"name": "a", "command": ["a"], "allowed_peers": ["a"]}`), "lists itself", "lists itself", 5},
		{"duplicate peer", campaign("a", `{"name": "a", "command": ["a"], "allowed_peers": ["b", "b"]}`, b), "twice in allowed_peers", "twice", 5},
		{"duplicate agent", campaign("a", a, b, `{"name": "a", "command": ["x"]}`), "declared twice", "declared twice", 7},
		{"no command", campaign("a", `{"name": "a"}`), "has no command", "has no command", 5},
		{"bad name", campaign("a", `{"name": "a b", "command": ["x"]}`), "use letters", "use letters", 5},
		{"empty name", campaign("a", `{"name": "", "command": ["x"]}`), "agent name is empty", "agent name is empty", 5},
		{"no agents", campaign("a"), "declares no agents", "declares no agents", 0},
		{"bad env", campaign("a", `{"name": "a", "command": ["x"], "env": {"A=B": "1"}}`), "environment variable", "environment variable", 5},
		{"bad envelope", campaign("a", `{"name": "a", "command": ["x"], "envelope": {"cpu_cores": {"min": 4, "max": 2}}}`), "envelope", "envelope", 5},
		{"bad backend", `{"name": "t", "initial_agent": "a", "agents": [{"name": "a", "command": ["a"]}], "exchange": {"backend": "kafka"}}`, `backend "kafka" is unknown`, "kafka", 1},
		{"redis without url", `{"name": "t", "initial_agent": "a", "agents": [{"name": "a", "command": ["a"]}], "exchange": {"backend": "redis"}}`, "needs \"redis_url\"", "redis_url", 1},
		{"bad url", `{"name": "t", "initial_agent": "a", "agents": [{"name": "a", "command": ["a"]}], "exchange": {"url": "ftp://x"}}`, "not an http(s) URL", "http(s)", 1},
		{"bad redis url", `{"name": "t", "initial_agent": "a", "agents": [{"name": "a", "command": ["a"]}], "exchange": {"redis_url": "http://x"}}`, "not a redis:// URL", "redis://", 1},
		{"negative size", `{"name": "t", "initial_agent": "a", "agents": [{"name": "a", "command": ["a"]}], "exchange": {"max_message_bytes": -1}}`, "negative", "negative", 1},
		{"no name", `{"initial_agent": "a", "agents": [{"name": "a", "command": ["a"]}]}`, "campaign name is empty", "campaign name is empty", 0},
		{"academy agent", campaign("a", `{"name": "a", "command": ["python3", "a.py"], "protocol": "academy"}`, `{"name": "b", "command": ["b"], "protocol": "mosaic"}`), "", "", 0},
		{"unknown protocol", campaign("a", `{"name": "a", "command": ["a"], "protocol": "Academy"}`), `protocol "Academy" is unknown; use "academy"`, `protocol "Academy" is unknown`, 5},
		{"bootstrap action", `{"name": "t", "initial_agent": "a", "bootstrap_action": "run_task", "agents": [{"name": "a", "command": ["a"], "protocol": "academy"}]}`, "", "", 0},
		{"bad bootstrap action", `{"name": "t", "initial_agent": "a", "bootstrap_action": "receive message", "agents": [{"name": "a", "command": ["a"]}]}`, `bootstrap_action "receive message" is not an action name`, "not an action name", 1},
		{"bootstrap action without academy agent", `{"name": "t", "initial_agent": "a", "bootstrap_action": "go", "agents": [{"name": "a", "command": ["a"]}]}`, "has no effect: no agent is declared", "", 1},
		{"bootstrap action digit first", `{"name": "t", "initial_agent": "a", "bootstrap_action": "1go", "agents": [{"name": "a", "command": ["a"]}]}`, "not an action name", "not an action name", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.doc), "v.jsonc")
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range []struct {
				mode Mode
				want string
			}{{Strict, tc.strict}, {Federated, tc.federated}} {
				err := s.Validate(m.mode)
				if m.want == "" {
					if err != nil {
						t.Errorf("%s: rejected: %v", m.mode, err)
					}
					continue
				}
				if err == nil || !strings.Contains(err.Error(), m.want) {
					t.Errorf("%s: got %v, want error containing %q", m.mode, err, m.want)
					continue
				}
				var se *SpecError
				if tc.line > 0 && errors.As(err, &se) && se.Line != tc.line {
					t.Errorf("%s: error at line %d, want %d: %v", m.mode, se.Line, tc.line, err)
				}
				if !strings.HasPrefix(err.Error(), "v.jsonc") {
					t.Errorf("%s: error does not name the file: %v", m.mode, err)
				}
			}
		})
	}
}

func TestValidateReportsAll(t *testing.T) {
	s, err := Parse([]byte(campaign("zed", `{"name": "a", "command": ["a"], "allowed_peers": ["a", "q"]}`)), "v.jsonc")
	if err != nil {
		t.Fatal(err)
	}
	msg := s.Validate(Strict).Error()
	for _, want := range []string{"lists itself", `"q"`, `"zed"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in %s", want, msg)
		}
	}
}

func TestParseAgentsSelection(t *testing.T) {
	for in, want := range map[string]string{
		"a,b":          "a|b",
		" a , b ":      "a|b",
		"a,,b,":        "a|b",
		"":             "",
		" , ,":         "",
		"worker-b,a,a": "worker-b|a|a",
	} {
		if got := strings.Join(ParseAgentsSelection(in), "|"); got != want {
			t.Errorf("%q: got %q want %q", in, got, want)
		}
	}
}

func TestSlice(t *testing.T) {
	doc := campaign("a",
		`{"name": "a", "command": ["a"], "allowed_peers": ["b", "c"]}`,
		`{"name": "b", "command": ["b"], "allowed_peers": ["a"], "env": {"K": "v"}}`,
		`{"name": "c", "command": ["c"], "allowed_peers": ["a", "c"]}`)
	s, err := Parse([]byte(doc), "s.jsonc")
	if err != nil {
		t.Fatal(err)
	}
	sl, err := s.Slice(ParseAgentsSelection(" c , b "))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sl.Names(), ","); got != "c,b" {
		t.Errorf("order: %s", got)
	}
	if sl.InitialAgent != "a" {
		t.Errorf("initial agent rewritten to %q", sl.InitialAgent)
	}
	sl.Agents[1].Env["K"] = "changed"
	sl.Agents[1].AllowedPeers[0] = "zz"
	if s.Agents[1].Env["K"] != "v" || s.Agents[1].AllowedPeers[0] != "a" {
		t.Error("slice aliases the parent spec")
	}
	// Federated validation of the slice still reports c's self-peer, at c's line
	// in the file (line 7), although c is agents[0] of the slice.
	err = sl.Validate(Federated)
	var se *SpecError
	if err == nil || !errors.As(err, &se) || se.Line != 7 || !strings.Contains(err.Error(), "lists itself") {
		t.Errorf("federated slice: %v", err)
	}
	okSlice, _ := s.Slice([]string{"b"})
	if err := okSlice.Validate(Federated); err != nil {
		t.Errorf("federated slice with remote peer and initial agent: %v", err)
	}
	if err := okSlice.Validate(Strict); err == nil {
		t.Error("strict validation of a slice with remote peers passed")
	}
	for sel, want := range map[string][]string{
		"":          {"empty agent selection", "a, b, c"},
		"a,x,y":     {"unknown agent(s) in selection: x, y"},
		"a,b,a,b,a": {"more than once: a, b"},
		"x,a,a":     {"unknown agent(s) in selection: x", "more than once: a"},
	} {
		_, err := s.Slice(ParseAgentsSelection(sel))
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%q: got %v, want %q", sel, err, w)
			}
		}
	}
}

func TestAgentUID(t *testing.T) {
	// Computed independently with Python:
	//   uuid.uuid5(uuid.UUID('1e7eda44-1b34-4f5a-b2a1-cf5ca5db8e8b'), 'run-1/planner')
	for in, want := range map[[2]string]string{
		{"run-1", "planner"}:                        "1143360a-5475-5cfe-86cc-b8898e3deaf8",
		{"run-1", "worker-a"}:                       "67d43a5b-c13c-5eb1-98fd-38b2842244f1",
		{"federated-demo-001", "coordinator-agent"}: "491855e9-bc71-57b9-9c4a-36c1eaef6eb7",
	} {
		if got := AgentUID(in[0], in[1]).String(); got != want {
			t.Errorf("AgentUID(%q, %q) = %s, want %s", in[0], in[1], got, want)
		}
	}
	s, _ := Parse([]byte(campaign("planner", `{"name": "planner", "command": ["p"]}`)), "")
	if got := s.AgentUIDs("run-1")["planner"].String(); got != "1143360a-5475-5cfe-86cc-b8898e3deaf8" {
		t.Errorf("AgentUIDs: %s", got)
	}
}

func FuzzParseCampaign(f *testing.F) {
	f.Add([]byte(goodJSONC))
	f.Add([]byte(campaign("a", `{"name": "a", "command": ["a"], "allowed_peers": ["b"]}`)))
	f.Add([]byte(`{"agents": [{"name": "a", "envelope": {"walltime": {"min": "1-00:00:00"}}}]}`))
	f.Add([]byte("// c\n{/* x */\"name\":\"y\",}"))
	f.Add([]byte(`{"exchange": {"discover_timeout": 5}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data, "fuzz.jsonc")
		if err != nil {
			var se *SpecError
			if !errors.As(err, &se) || se.File != "fuzz.jsonc" {
				t.Fatalf("error is not a *SpecError naming the file: %v", err)
			}
			if se.Line > strings.Count(string(data), "\n")+1 {
				t.Fatalf("line %d beyond end of input", se.Line)
			}
			return
		}
		for _, m := range []Mode{Strict, Federated} {
			_ = s.Validate(m) // must not panic
		}
		if len(s.Agents) > 0 {
			if sl, err := s.Slice(s.Names()[:1]); err == nil {
				_ = sl.Validate(Federated)
			}
		}
		_ = s.AgentUIDs("run")
	})
}
