package main

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// cobraGenerated are the commands cobra adds (completion scripts, help): no
// Example of ours, no group of their own beyond "other".
var cobraGenerated = map[string]bool{
	"mosaic help": true, "mosaic completion": true, "mosaic completion bash": true, "mosaic completion zsh": true,
	"mosaic completion fish": true, "mosaic completion powershell": true,
}

// fullTree is the command tree as Execute sees it (with cobra's help and
// completion commands).
func fullTree() *cobra.Command {
	root := newRootCmd()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	return root
}

func walkTree(c *cobra.Command, f func(*cobra.Command)) {
	f(c)
	for _, sub := range c.Commands() {
		walkTree(sub, f)
	}
}

// TestEveryCommandHasExample: every visible command (group commands included)
// shows at least one real invocation; hidden ones and cobra's own are exempt.
func TestEveryCommandHasExample(t *testing.T) {
	n := 0
	walkTree(fullTree(), func(c *cobra.Command) {
		if !c.HasParent() || c.Hidden || cobraGenerated[c.CommandPath()] {
			return
		}
		n++
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%q has no Example; add real invocations (cmd/mosaic)", c.CommandPath())
		}
	})
	if n < 40 {
		t.Fatalf("only %d commands walked; the walk is broken", n)
	}
}

// splitShell splits one example line as a POSIX shell would for our examples:
// words, '…' and "…" quoting, backslash escapes; it stops at an unquoted > or |
// (the rest is the shell's business, not mosaic's arguments).
func splitShell(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", line)
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case ch == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && strings.ContainsRune(`"\$`+"`", rune(line[i+1])) {
					i++
				}
				cur.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, fmt.Errorf("unterminated \" in %q", line)
			}
			inWord = true
		case ch == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		case ch == ' ' || ch == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case (ch == '>' || ch == '|') && !inWord:
			return words, nil
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// examplesOf returns a command's example invocations, continuation lines joined.
func examplesOf(c *cobra.Command) []string {
	var out []string
	var cur string
	for _, l := range strings.Split(c.Example, "\n") {
		l = strings.TrimSpace(l)
		if cont, ok := strings.CutSuffix(l, "\\"); ok {
			cur += cont + " "
			continue
		}
		cur += l
		if strings.TrimSpace(cur) != "" {
			out = append(out, strings.TrimSpace(cur))
		}
		cur = ""
	}
	return out
}

// TestExamplesParse: every example that runs mosaic names the command it documents
// and parses: its flags exist and take the values shown (--json fields checked
// against what the command prints, --jq compiled), its arguments are accepted.
func TestExamplesParse(t *testing.T) {
	checked := 0
	walkTree(fullTree(), func(c *cobra.Command) {
		if c.Hidden || cobraGenerated[c.CommandPath()] {
			return
		}
		mine := 0
		for _, ex := range examplesOf(c) {
			words, err := splitShell(ex)
			if err != nil {
				t.Errorf("%s: %v", c.CommandPath(), err)
				continue
			}
			if len(words) == 0 || words[0] != "mosaic" {
				if i := slices.Index(words, "mosaic"); i > 0 && words[i-1] == "--" { // claude mcp add mosaic -- mosaic mcp
					words = words[i:]
				} else {
					continue
				}
			}
			mine++
			root := newRootCmd() // fresh flags for every example
			found, rest, err := root.Find(words[1:])
			if err != nil {
				t.Errorf("%s: example %q: %v", c.CommandPath(), ex, err)
				continue
			}
			if found.CommandPath() != c.CommandPath() && !c.HasSubCommands() {
				t.Errorf("%s: example %q runs %s", c.CommandPath(), ex, found.CommandPath())
				continue
			}
			if err := found.ParseFlags(rest); err != nil {
				t.Errorf("%s: example %q: flags: %v", c.CommandPath(), ex, err)
				continue
			}
			if err := found.ValidateArgs(found.Flags().Args()); err != nil {
				t.Errorf("%s: example %q: arguments: %v", c.CommandPath(), ex, err)
			}
			checked++
		}
		if mine == 0 && c.HasParent() && c.Runnable() {
			t.Errorf("%s: no example runs mosaic", c.CommandPath())
		}
	})
	if checked < 60 {
		t.Fatalf("only %d examples checked", checked)
	}
}

// TestEveryCommandGrouped: `mosaic --help` lists every top-level command under
// its group (federation, tasks, sites, campaigns, auth, server); only cobra's
// help and completion sit in "other".
func TestEveryCommandGrouped(t *testing.T) {
	root := fullTree()
	for _, c := range root.Commands() {
		if c.Hidden {
			continue
		}
		want := c.GroupID != "" && c.GroupID != groupOther
		if cobraGenerated[c.CommandPath()] {
			want = c.GroupID == groupOther
		}
		if !want {
			t.Errorf("%s is in group %q; add it to groupOf (cmd/mosaic/groups.go)", c.CommandPath(), c.GroupID)
		}
	}
	var b bytes.Buffer
	root.SetOut(&b)
	root.SetArgs([]string{"--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, g := range commandGroups {
		if !strings.Contains(b.String(), "\n"+g.title+"\n") {
			t.Errorf("--help lacks the group %q:\n%s", g.title, b.String())
		}
	}
}

// Argument kinds a data command completes.
const (
	argNone    = "none"    // no arguments: no file names offered
	argTask    = "task"    // a task id, from the running core
	argSystem  = "system"  // a system, from the core or the catalog
	argRun     = "run"     // a launched campaign run
	argFile    = "file"    // a campaign file (*.jsonc, *.json)
	argMachine = "machine" // a known machine (init-sites)
)

// dataCommands are the commands that print data: each takes --json and --jq and
// completes its arguments as listed. Every other runnable command is in
// notDataCommands with the reason; a new command must join one of the two.
var dataCommands = map[string]string{
	"mosaic resources": argSystem, "mosaic idle": argNone, "mosaic status": argNone, "mosaic about": argNone,
	"mosaic env": argSystem, "mosaic exec": argSystem, "mosaic put-file": argSystem,
	"mosaic submit": argNone, "mosaic task": argTask, "mosaic tasks": argNone, "mosaic cancel": argTask, "mosaic replan": argTask,
	"mosaic logs": argTask, "mosaic events": argNone, "mosaic envelope": argNone,
	"mosaic init-sites": argMachine, "mosaic preflight": argNone, "mosaic smoke": argSystem, "mosaic doctor": argNone,
	"mosaic login": argNone, "mosaic auth": argNone, "mosaic endpoints": argNone, "mosaic skill": argNone,
	"mosaic campaign ids": argFile, "mosaic campaign validate": argFile, "mosaic campaign status": argRun, "mosaic campaign timeline": argRun,
	"mosaic sim replay": argNone,
	// Added by the users part of issue 20 (listed so its merge needs no change here).
	"mosaic users list": argNone, "mosaic users add": argNone, "mosaic token create": argNone, "mosaic token list": argNone,
	"mosaic audit": argNone,
}

var notDataCommands = map[string]string{
	"mosaic serve":                 "runs the core (a server; its log is not data)",
	"mosaic mcp":                   "serves MCP on stdio",
	"mosaic logout":                "prints one confirmation line",
	"mosaic endpoint-setup":        "prints a bash script to pipe or run",
	"mosaic campaign spawn-site":   "runs a site's agents; landmarks on stderr",
	"mosaic campaign bootstrap":    "sends one message; progress on stderr",
	"mosaic campaign launch":       "runs a campaign to its end; progress on stderr",
	"mosaic campaign stop":         "stops a run; progress on stderr",
	"mosaic campaign resume":       "follows a run to its end; progress on stderr",
	"mosaic agent run":             "runs an agent's command (its stdout is the agent's)",
	"mosaic exchange serve":        "runs the exchange (a server)",
	"mosaic exchange ping":         "prints one reachability line",
	"mosaic exchange relay":        "forwards TCP (hidden, internal)",
	"mosaic campaign":              "a command group",
	"mosaic agent":                 "a command group",
	"mosaic exchange":              "a command group",
	"mosaic sim":                   "a command group",
	"mosaic help":                  "cobra's help",
	"mosaic completion bash":       "a completion script",
	"mosaic completion zsh":        "a completion script",
	"mosaic completion fish":       "a completion script",
	"mosaic completion powershell": "a completion script",
	"mosaic users":                 "a command group (users part)",
	"mosaic token":                 "a command group (users part)",
	"mosaic users revoke":          "prints one confirmation line",
	"mosaic token revoke":          "prints one confirmation line",
	"mosaic completion":            "a command group",
}

// complete runs cobra's hidden __complete command and returns the candidates and
// the directive.
func complete(t *testing.T, args ...string) ([]string, cobra.ShellCompDirective) {
	t.Helper()
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(append([]string{cobra.ShellCompRequestCmd}, args...))
	if err := root.Execute(); err != nil {
		t.Fatalf("__complete %v: %v", args, err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := lines[len(lines)-1]
	d, err := strconv.Atoi(strings.TrimPrefix(last, ":"))
	if !strings.HasPrefix(last, ":") || err != nil {
		t.Fatalf("__complete %v: no directive in %q", args, out.String())
	}
	var comps []string
	for _, l := range lines[:len(lines)-1] {
		v, _, _ := strings.Cut(l, "\t")
		comps = append(comps, v)
	}
	return comps, cobra.ShellCompDirective(d)
}

// isolate points the CLI at no core and an empty config: completion falls back to
// the embedded simulated federation.
func isolate(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("XDG_CONFIG_HOME", dir+"/config")
	t.Setenv("XDG_STATE_HOME", dir+"/state")
	t.Setenv("MOSAIC_SITES", "")
	t.Setenv("MOSAIC_URL", "http://127.0.0.1:1")
	t.Setenv("MOSAIC_TOKEN", "mtk_completion_test")
}

// TestDataCommandsJSONJQAndCompletion walks the tree: every data command takes
// --json and --jq and completes its arguments; every other command says why not.
func TestDataCommandsJSONJQAndCompletion(t *testing.T) {
	isolate(t)
	seen := map[string]bool{}
	walkTree(fullTree(), func(c *cobra.Command) {
		p := c.CommandPath()
		if !c.HasParent() {
			return
		}
		kind, data := dataCommands[p]
		if !data {
			if _, ok := notDataCommands[p]; !ok {
				t.Errorf("%s is neither in dataCommands nor in notDataCommands (cmd/mosaic/cli_test.go): does it print data? then give it --json (addJSONFlag)", p)
			}
			return
		}
		seen[p] = true
		for _, f := range []string{"json", "jq"} {
			if c.Flags().Lookup(f) == nil {
				t.Errorf("%s: a data command without --%s (addJSONFlag)", p, f)
			}
		}
		if f := c.Flags().Lookup("jq"); f != nil {
			if err := f.Value.Set(".[0]?"); err != nil {
				t.Errorf("%s: --jq '.[0]?' refused: %v", p, err)
			}
			if err := f.Value.Set(".["); err == nil {
				t.Errorf("%s: --jq '.[' accepted", p)
			}
		}
		words := append(strings.Fields(p)[1:], "")
		comps, dir := complete(t, words...)
		switch kind {
		case argNone, argTask, argRun:
			// No core answers here: task ids complete to nothing, silently.
			if dir&cobra.ShellCompDirectiveNoFileComp == 0 || dir&cobra.ShellCompDirectiveError != 0 {
				t.Errorf("%s: completion directive %d, want no file names", p, dir)
			}
		case argSystem:
			if !slices.Contains(comps, "Delta@NCSA") {
				t.Errorf("%s: completes %v, want the systems (Delta@NCSA …)", p, comps)
			}
		case argMachine:
			if !slices.Contains(comps, "delta") {
				t.Errorf("%s: completes %v, want the known machines (delta …)", p, comps)
			}
		case argFile:
			if dir&cobra.ShellCompDirectiveFilterFileExt == 0 || !slices.Contains(comps, "jsonc") {
				t.Errorf("%s: completes %v (directive %d), want *.jsonc files", p, comps, dir)
			}
		}
		// --json completes the fields of what the command prints.
		if fields, _ := complete(t, append(strings.Fields(p)[1:], "--json=")...); len(fields) == 0 && p != "mosaic sim replay" {
			t.Errorf("%s: --json= completes no field names", p)
		}
	})
	for p := range dataCommands {
		if !seen[p] && !strings.HasPrefix(p, "mosaic users") && !strings.HasPrefix(p, "mosaic token") {
			t.Errorf("dataCommands lists %s, which does not exist", p)
		}
	}
}

// TestFlagCompletion: flag values complete from the federation (the embedded one
// here), the vocabulary (objectives, states) and what a command prints (--json).
func TestFlagCompletion(t *testing.T) {
	isolate(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"submit", "--gpu-model", ""}, "A100"},
		{[]string{"submit", "--gpu-model", "A100,H"}, "A100,H100"},
		{[]string{"submit", "--objective", ""}, "earliest_start"},
		{[]string{"submit", "--target", "Delta"}, "Delta@NCSA"},
		{[]string{"submit", "--avoid", "Delta@NCSA,An"}, "Delta@NCSA,Anvil@RCAC"},
		{[]string{"submit", "--arch", ""}, "aarch64"},
		{[]string{"idle", "--system", ""}, "Vista@TACC"},
		{[]string{"idle", "--provider", ""}, "sim"},
		{[]string{"tasks", "--state", "running,q"}, "running,queued"},
		{[]string{"tasks", "--json=id,st"}, "id,state"},
		{[]string{"task", "x", "--json=attempts.s"}, "attempts.system"},
		{[]string{"tasks", "-o", ""}, "wide"},
		{[]string{"smoke", "Delta@NCSA", "--partition", ""}, "cpu"},
		{[]string{"init-sites", "delta", "an"}, "anvil"},
		{[]string{"--color", ""}, "never"},
	}
	for _, c := range cases {
		comps, _ := complete(t, c.args...)
		if !slices.Contains(comps, c.want) {
			t.Errorf("__complete %q: %v, want %q among them", c.args, comps, c.want)
		}
	}
	// completion scripts: cobra's, for the shells users have.
	for _, sh := range []string{"bash", "zsh", "fish"} {
		root := newRootCmd()
		var b bytes.Buffer
		root.SetOut(&b)
		root.SetArgs([]string{"completion", sh})
		if err := root.Execute(); err != nil || !strings.Contains(b.String(), "__complete") {
			t.Errorf("mosaic completion %s: %v, %d bytes without __complete", sh, err, b.Len())
		}
	}
}

// TestCompletionIgnoresWorkDirSites: completion finds the catalog like serve
// (never ./sites.yaml: the working directory is not trusted), so a repository
// one cds into cannot put names of its choosing on the command line.
func TestCompletionIgnoresWorkDirSites(t *testing.T) {
	isolate(t)
	t.Chdir(t.TempDir())
	if err := os.WriteFile("sites.yaml", []byte("systems:\n  - name: Hostile\n    kind: sim\n    machine: delta\n    partitions:\n      - {name: cpu, accounts: [demo]}\n    sim:\n      max_nodes: 4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	comps, _ := complete(t, "env", "")
	if slices.Contains(comps, "Hostile") || !slices.Contains(comps, "Delta@NCSA") {
		t.Errorf("env completes %v: want the embedded federation, not ./sites.yaml", comps)
	}
	// Named on purpose (MOSAIC_SITES), it is used.
	t.Setenv("MOSAIC_SITES", "./sites.yaml")
	if comps, _ = complete(t, "env", ""); !slices.Contains(comps, "Hostile") {
		t.Errorf("with MOSAIC_SITES=./sites.yaml env completes %v", comps)
	}
}
