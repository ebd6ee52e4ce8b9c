package hpc

import (
	"strings"
	"testing"
)

func TestCheckExec(t *testing.T) {
	ok := [][]string{
		{"sinfo", "-o", "%P %a"}, {"squeue", "--me"}, {"scontrol", "show", "partition"}, {"sacctmgr", "-n", "-P", "show", "assoc"},
		{"ls", "-la", "/scratch/u"}, {"tail", "-n", "50", "/w/mosaic/x.out"}, {"nvidia-smi", "--query-gpu=name,memory.total", "--format=csv"},
		{"python3", "--version"}, {"qstat", "-Q", "-f", "-F", "json"}, {"pbsnodes", "-a", "-F", "json"}, {"find", "/w", "-name", "x.out"},
		{"df", "-h", "/scratch"}, {"date", "-u"},
	}
	for _, argv := range ok {
		if err := CheckExec(argv); err != nil {
			t.Errorf("%q: %v", argv, err)
		}
	}
	bad := map[string]struct {
		argv []string
		why  string
	}{
		"empty":          {nil, "empty"},
		"not allowed":    {[]string{"rm", "-rf", "/"}, "allowlist"},
		"sbatch":         {[]string{"sbatch", "x.sh"}, "allowlist"},
		"shell":          {[]string{"bash", "-c", "id"}, "allowlist"},
		"path":           {[]string{"/usr/bin/ls"}, "not a path"},
		"semicolon":      {[]string{"ls", "a;rm -rf ~"}, "contains"},
		"pipe":           {[]string{"cat", "x|y"}, "contains"},
		"dollar":         {[]string{"echo", "$HOME"}, "allowlist"},
		"subst":          {[]string{"ls", "$(id)"}, "contains"},
		"backtick":       {[]string{"ls", "`id`"}, "contains"},
		"glob":           {[]string{"ls", "*.out"}, "contains"},
		"redirect":       {[]string{"cat", "a>b"}, "contains"},
		"newline":        {[]string{"ls", "a\nb"}, "contains"},
		"scontrol write": {[]string{"scontrol", "update", "nodename=x", "state=drain"}, "read-only subcommands"},
		"scontrol bare":  {[]string{"scontrol"}, "required"},
		"sacctmgr add":   {[]string{"sacctmgr", "-i", "add", "user", "x"}, "read-only"},
		"tail follow":    {[]string{"tail", "-f", "x.out"}, "never ends"},
		"find exec":      {[]string{"find", ".", "-exec", "rm", "{}"}, "contains"},
		"find delete":    {[]string{"find", ".", "-delete"}, "changes state"},
		"pbsnodes off":   {[]string{"pbsnodes", "-o", "n1"}, "changes state"},
		"python code":    {[]string{"python3", "-c", "import os"}, "not allowed"},
		"ssh key":        {[]string{"cat", "/home/u/.ssh/id_ed25519"}, "credential"},
		"token":          {[]string{"cat", "/home/u/.globus/token.json"}, "credential"},
	}
	for name, c := range bad {
		err := CheckExec(c.argv)
		if err == nil {
			t.Errorf("%s: %q allowed", name, c.argv)
			continue
		}
		if !strings.Contains(err.Error(), c.why) || !strings.HasPrefix(err.Error(), "refused") {
			t.Errorf("%s: refusal %q should mention %q", name, err, c.why)
		}
	}
}

func TestCleanPutPath(t *testing.T) {
	ok := map[string]string{
		"x.py":             "/w/x.py",
		"sub/dir/x.py":     "/w/sub/dir/x.py",
		"./a//b/./c.txt":   "/w/a/b/c.txt",
		"/w/inside.txt":    "/w/inside.txt",
		"name with space":  "/w/name with space",
		"日本/ファイル.txt":      "/w/日本/ファイル.txt",
		"a..b/..c":         "/w/a..b/..c",
		"/w/./deep/../x":   "",
		"../escape":        "",
		"a/../../etc":      "",
		"/etc/passwd":      "",
		"/wx/neighbour":    "",
		"/w":               "",
		".":                "",
		"":                 "",
		"bad\x00nul":       "",
		"bad\nnewline.txt": "",
	}
	for in, want := range ok {
		got, err := CleanPutPath("/w/", in, 10)
		if want == "" {
			if err == nil {
				t.Errorf("CleanPutPath(%q) = %q, want refusal", in, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("CleanPutPath(%q) = %q %v, want %q", in, got, err, want)
		}
	}
	if _, err := CleanPutPath("/w", "x", MaxPutFile); err != nil {
		t.Errorf("exactly 2 MiB: %v", err)
	}
	if _, err := CleanPutPath("/w", "x", MaxPutFile+1); err == nil || !strings.Contains(err.Error(), "2 MiB") {
		t.Errorf("2 MiB + 1: %v", err)
	}
	if _, err := CleanPutPath("relative", "x", 1); err == nil {
		t.Error("relative workdir: want refusal")
	}
}

func TestParseEnv(t *testing.T) {
	out := "@@host\nlogin1\n@@user\nalice\n@@workdir\nexists\n@@python\nPython 3.11.2\n@@torch\n2.3.1+cu121\n@@containers\napptainer\n" +
		"@@modules\ngcc/12.2\ncuda/12.4\npython/3.11\n@@assoc\nalpha|rigacct||normal\n@@end\n"
	env, err := ParseEnv([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if env.Host != "login1" || env.User != "alice" || !env.WorkDirExists || env.Python != "Python 3.11.2" || env.Torch != "2.3.1+cu121" ||
		len(env.ContainerRuntimes) != 1 || env.ModuleCount != 3 || env.Associations[0] != "alpha|rigacct||normal" {
		t.Errorf("%+v", env)
	}
	env, err = ParseEnv([]byte("@@host\nh\n@@python\nsh: python3: not found\n@@end\n"))
	if err != nil || env.Python != "" || env.WorkDirExists {
		t.Errorf("%+v %v", env, err)
	}
	if _, err := ParseEnv([]byte("@@host\nh\n")); err == nil {
		t.Error("truncated: want error")
	}
	var many strings.Builder
	many.WriteString("@@modules\n")
	for i := 0; i < 500; i++ {
		many.WriteString("mod/1\n")
	}
	many.WriteString("@@end\n")
	if env, _ := ParseEnv([]byte(many.String())); env.ModuleCount != 500 || len(env.Modules) != MaxModules {
		t.Errorf("modules: %d %d", env.ModuleCount, len(env.Modules))
	}
}

func FuzzParseEnv(f *testing.F) {
	f.Add([]byte("@@host\nh\n@@modules\na\nb\n@@end\n"))
	f.Add([]byte("@@@@\n@@end"))
	f.Fuzz(func(t *testing.T, b []byte) {
		env, err := ParseEnv(b)
		if err == nil && len(env.Modules) > MaxModules {
			t.Fatal("module list not capped")
		}
	})
}
