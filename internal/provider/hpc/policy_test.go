package hpc

import (
	"strings"
	"testing"
)

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
