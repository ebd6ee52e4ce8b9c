package hpc

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/site"
)

// testPolicy is a local-looking system: workdir /w/u, home /home/u, and the core's
// config and state directories somewhere XDG put them.
var testPolicy = ExecPolicy{WorkDir: "/w/u", Home: "/home/u", Protected: []string{"/xdg/cfg/mosaic", "/xdg/state/mosaic"}}

// TestCheckExecHostile: each command would read secrets, never end, leave the
// workdir or change state. The command line is split the way core.Exec splits it.
func TestCheckExecHostile(t *testing.T) {
	hostile := []struct{ cmd, why, reason string }{
		{"grep -r -h -e . ~/.config", "outside the workdir", "a recursive read of ~/.config reaches Mosaic's token"},
		{"grep -rh . /home", "outside the workdir", "recursive read of every home directory"},
		{"grep -e . --recursive /", "outside the workdir", "long form of -r over the whole machine"},
		{"grep --recur . /etc", "outside the workdir", "unique-prefix abbreviation of --recursive"},
		{"grep -d recurse . /etc", "outside the workdir", "-d recurse is -r"},
		{"grep --directories=recurse . /home/u", "outside the workdir", "--directories=recurse is -r"},
		{"grep -R x /w/u", "follows every symlink", "-R follows symlinks out of the workdir"},
		{"grep --dereference-rec x .", "follows every symlink", "abbreviated -R"},
		{"grep -r x /w/u/..", "outside the workdir", "'..' out of the workdir"},
		{"grep -r x .. ", "outside the workdir", "relative '..' out of the workdir"},
		{"grep -r x /home/u", "outside the workdir", "the home directory"},
		{"grep -f /home/u/.ssh/id_rsa x.out", "SSH keys", "a key as the pattern file"},
		{"grep --exclude-from=/xdg/cfg/mosaic/token -r x .", "Mosaic", "Mosaic's token as an exclude file"},
		{"grep --re x .", "ambiguous", "--re could be --regexp or --recursive"},
		{"printenv", "environment", "prints the core's environment with its keys"},
		{"printenv MOSAIC_LLM_API_KEY", "environment", "one key by name"},
		{"env", "environment", "prints the environment"},
		{"set", "environment", "shell builtin printing the environment"},
		{"export", "environment", "shell builtin printing the environment"},
		{"declare -x", "environment", "shell builtin printing the environment"},
		{"cat /proc/self/environ", "/proc", "the environment of the reading process"},
		{"cat /proc/1/environ", "/proc", "another process's environment"},
		{"head -c 100 /proc/self/cmdline", "/proc", "command lines can carry tokens"},
		{"cat /proc/thread-self/environ", "/proc", "another spelling of self"},
		{"cat /proc/1/root/home/u/.ssh/id_rsa", "/proc", "through /proc/PID/root"},
		{"tail -fn1 x.out", "follow", "a cluster hiding -f"},
		{"tail -f x.out", "follow", "follow mode never ends"},
		{"tail -F x.out", "follow", "follow by name with retry"},
		{"tail --foll x.out", "follow", "abbreviated --follow"},
		{"tail --follow=name x.out", "follow", "--follow with a value"},
		{"tail -5f x.out", "follow", "obsolete -NUMf form"},
		{"tail -n 1 --retry x.out", "follow", "--retry keeps waiting"},
		{"tail +5f x.out", "obsolete", "obsolete +N form"},
		{"tail -s 1 x.out", "follow", "sleep interval only matters when following"},
		{"cat ~/.ssh/id_ed25519", "SSH keys", "an SSH private key via ~"},
		{"cat $HOME/.config/mosaic/token", "Mosaic", "Mosaic's API token via $HOME"},
		{"cat ~/../root/.ssh/id_rsa", "SSH keys", "another user's key via ~/.."},
		{"cat /home/u/.ssh/config", "SSH keys", "SSH configuration"},
		{"cat ./x/../../.ssh/config", "SSH keys", "'..' from the workdir into a sibling .ssh"},
		{"cat //home//u//.ssh//id_rsa", "SSH keys", "doubled slashes"},
		{"head ~/.globus/tokens.json", "Globus", "Globus tokens"},
		{"head /home/u/.globus_compute/storage.db", "Globus", "Globus Compute credentials"},
		{"cat /home/u/.netrc", "key, token or credential", "netrc passwords"},
		{"cat /home/u/.aws/credentials", "cloud", "AWS keys"},
		{"cat /home/u/.docker/config.json", "cloud", "registry tokens"},
		{"cat /xdg/cfg/mosaic/sites.yaml", "Mosaic", "the core's config dir where XDG puts it"},
		{"wc -l /xdg/state/mosaic/mosaic.db", "Mosaic", "the core's state dir"},
		{"cat /home/u/.local/state/mosaic/mosaic.db", "Mosaic", "the default state dir"},
		{"cat /w/u/mosaic-campaign/run1/token", "token", "a campaign's exchange token inside the workdir"},
		{"cat /w/u/server.pem", "key, token", "a certificate key"},
		{"cat /w/u/tls.key", "key, token", "a key file"},
		{"cat /etc/shadow", "system secrets", "password hashes"},
		{"cat /etc/slurm/slurmdbd.conf", "system secrets", "the accounting database password"},
		{"cat /etc/munge/munge.key", "system secrets", "the munge key forges Slurm credentials"},
		{"wc --files0-from=/home/u/.ssh/id_rsa", "names of the files", "a key as a list of names"},
		{"wc --files0-from=list", "names of the files", "names from a file escape the path checks"},
		{"du --files0-from=list", "names of the files", "du start points from a file"},
		{"file -f /home/u/.ssh/id_rsa", "names of the files", "file -f prints each line of its name file"},
		{"file --files-from=names", "names of the files", "long form"},
		{"cat /w/u/mosaic/mosaic-t1.sbatch", "job scripts", "a job script with forwarded keys"},
		{"grep -e KEY mosaic/x.pbs", "job scripts", "a PBS job script"},
		{"find / -name '*token*'", "outside the workdir", "a whole-machine search"},
		{"find /home/u -name x", "outside the workdir", "searching the home directory"},
		{"find", "contains /home/u", "find with no start point searches the workdir; here home is inside it"},
		{"find . -exec cat {} ;", "runs a program", "-exec runs anything"},
		{"find . -delete", "deletes", "-delete changes state"},
		{"find . -fprint /tmp/x", "writes a file", "-fprint writes"},
		{"find -L .", "follows every symlink", "-L follows symlinks out of the workdir"},
		{"find . -follow", "follows every symlink", "-follow follows symlinks"},
		{"find . -name -delete", "deletes", "a value that is a refused predicate stays refused"},
		{"du -a ~", "outside the workdir", "du reads the whole home directory"},
		{"du -sh /home/u", "outside the workdir", "du on an arbitrary root"},
		{"du -L .", "follows every symlink", "du -L follows symlinks"},
		{"ls -R ~", "outside the workdir", "a recursive listing of home"},
		{"ls --recursive /", "outside the workdir", "a recursive listing of everything"},
		{"ls -lRL .", "follows every symlink", "recursive and dereferencing"},
		{"ls /home/u/.ssh", "SSH keys", "listing the key directory"},
		{"stat /home/u/.ssh/id_ed25519", "SSH keys", "even metadata of a key is refused"},
		{"cat --nope x", "not one Mosaic knows", "an unknown long option"},
		{"cat -Z x", "not one Mosaic knows", "an unknown short option"},
		{"rm -rf /", "allowlist", "not read-only"},
		{"sbatch x.sh", "allowlist", "submits a job"},
		{"bash -c id", "allowlist", "a shell"},
		{"/usr/bin/ls", "not a path", "a path to a program"},
		{"ls a;rm", "contains", "shell metacharacter"},
		{"cat x|y", "contains", "pipe"},
		{"ls $(id)", "contains", "substitution"},
		{"ls `id`", "contains", "backticks"},
		{"ls *.out", "contains", "glob"},
		{"cat a>b", "contains", "redirection"},
		{"scontrol update nodename=x state=drain", "read-only subcommands", "changes the cluster"},
		{"scontrol", "required", "no subcommand"},
		{"sacctmgr -i add user x", "read-only", "changes accounting"},
		{"pbsnodes -o n1", "changes state", "offlines a node"},
		{"python3 -c import", "not allowed", "runs code"},
		{"file -C -m x", "writes a magic file", "file -C writes"},
		{"head -n", "needs a value", "missing value"},
		{"sacct -j 1 --env-vars", "job environments", "a job's exported environment"},
		{"sacct -j 1 --env", "job environments", "abbreviated --env-vars"},
		{"sacct -j 1 --batch-script", "job scripts", "a job's script with its exports"},
		{"sacct -XB -j 1", "job scripts", "-B in a cluster"},
		{"scontrol -dd show job 1", "job scripts", "-dd adds the batch script"},
		{"scontrol -d show job 1 --details", "job scripts", "-d twice"},
		{"qstat -f 12.pbs", "Variable_List", "PBS job details list its environment"},
		{"qstat -xf 12.pbs", "Variable_List", "-f in a cluster"},
		{"qstat -f -uQ,alice", "Variable_List", "a Q inside -u's value is not -Q"},
		{"qstat -fFQ", "Variable_List", "a Q inside -F's value is not -Q"},
		// file -m takes a list (/etc/magic:link) or a directory and prints the lines
		// it cannot parse: any file's contents.
		{"file -m /etc/magic:link /dev/null", "magic", "a colon list hiding a symlink to a key"},
		{"file -m /w/u /dev/null", "magic", "a directory of magic files"},
		{"file --magic-file=/etc/magic x", "magic", "long form"},
		{"file --magic /etc/magic x", "magic", "abbreviated long form"},
		{"file -bm /etc/magic x", "magic", "-m in a cluster"},
		// pbsnodes clusters
		{"pbsnodes -oCx n1", "changes state", "-o hidden in a cluster offlines a node"},
		{"pbsnodes -ar n1", "changes state", "-r in a cluster clears a node's offline state"},
		{"pbsnodes -lN note n1", "changes state", "-N in a cluster sets a note"},
		// more secret files, and names in any case
		{"cat /home/u/.bash_history", "histories", "shell history"},
		{"tail -n 50 /home/u/.zsh_history", "histories", "zsh history"},
		{"cat /home/u/.python_history", "histories", "REPL history"},
		{"cat /home/u/.npmrc", "key, token", "npm registry token"},
		{"cat /home/u/.pypirc", "key, token", "PyPI upload token"},
		{"cat /home/u/.git-credentials", "key, token", "git credential store"},
		{"cat /home/u/.config/gh/hosts.yml", "cloud", "GitHub CLI token"},
		{"cat /home/u/_netrc", "key, token", "netrc variant"},
		{"cat /home/u/.netrc.gpg", "key, token", "netrc variant"},
		{"cat /home/u/.bashrc", "start-up files", "rc files export API keys"},
		{"grep KEY /home/u/.profile", "start-up files", "profile"},
		{"cat /home/u/.zshrc", "start-up files", "zsh rc"},
		{"cat /home/u/.bash_profile", "start-up files", "bash profile"},
		{"cat /w/u/.TOKEN", "key, token", "upper-case token file"},
		{"cat /w/u/ID_RSA", "key, token", "upper-case key name"},
		{"cat /w/u/Server.PEM", "key, token", "upper-case extension"},
		{"cat /home/u/.SSH/id", "SSH keys", "upper-case directory on a case-insensitive file system"},
		{"cat /home/u/.Bash_History", "histories", "mixed-case history"},
	}
	if len(hostile) < 40 {
		t.Fatalf("only %d hostile commands", len(hostile))
	}
	for _, h := range hostile {
		argv := strings.Fields(h.cmd)
		pol := testPolicy
		if h.cmd == "find" {
			pol.WorkDir = "/home" // a workdir that holds the home directory
		}
		_, err := CheckExec(argv, pol)
		if err == nil {
			t.Errorf("%q allowed; it must be refused: %s", h.cmd, h.reason)
			continue
		}
		var re *RefusedError
		if !errors.As(err, &re) || !errors.Is(err, ErrRefused) || !strings.HasPrefix(err.Error(), "refused: ") {
			t.Errorf("%q: %v is not a *RefusedError", h.cmd, err)
		}
		if !strings.Contains(err.Error(), h.why) {
			t.Errorf("%q (%s): refusal %q should mention %q", h.cmd, h.reason, err, h.why)
		}
	}
}

// TestCheckExecLegit: ordinary look-around keeps working.
func TestCheckExecLegit(t *testing.T) {
	legit := []string{
		"sinfo -s", "sinfo -o %P", "squeue --me", "sacct -X -n", "scontrol show partition", "sacctmgr -n -P show assoc",
		"qstat -Q -f -F json", "qstat -Bf", "qstat -u alice", "pbsnodes -a -F json", "scontrol -d show job 1", "sacct -j 1 -o JobID,State", "nvidia-smi --query-gpu=name,memory.total --format=csv", "nvidia-smi -L",
		"python3 --version", "df -h /scratch", "df -h", "quota -s", "date -u", "hostname -f", "uname -a", "id", "whoami",
		"nproc", "free -g", "lscpu", "which python3", "which -a nvcc",
		"ls", "ls -la /scratch/u", "ls -l /home/u", "ls -R /w/u/mosaic", "ls -lR .", "ls --color=never -F /w/u",
		"cat x.out", "cat /w/u/mosaic/t1.out", "cat -n /etc/os-release", "head x.out", "head -n 20 x.out", "head -20 x.out",
		"head -c100 /w/u/x.err", "tail -n 50 /w/u/mosaic/x.out", "tail -n1 x.out", "tail -n +5 x.out", "tail -50 x.out",
		"tail --lines=5 x.out", "tail --li 5 x.out", "wc -l x.out", "stat -c %s x.out", "file x.out",
		"grep -c ERROR x.out", "grep -n -e oops -e fail /w/u/mosaic/x.err", "grep -r needle .", "grep -rn --include=py needle src",
		"grep -i -A 3 error -- x.out", "grep -C2 error x.out", "grep -3 error x.out", "grep --color=never x y",
		"find . -name x.out", "find /w/u -maxdepth 2 -type f -name x.out", "find -name x.out", "find mosaic -newer x.out -print",
		"du -sh .", "du -h --max-depth=1 /w/u", "du", "cat /proc/cpuinfo", "cat /proc/meminfo", "cat /etc/slurm/slurm.conf",
		"pbsnodes -l", "pbsnodes -av", "pbsnodes -aSj", "qstat -Qf", "qstat -f -Q workq", "file -b x.out", "file -i /w/u/x.out",
		"cat /etc/profile", "cat /etc/bash.bashrc", "ls -la /home/u", "cat /w/u/README.md", "cat /w/u/History.txt",
		"grep -f patterns.txt x.out", "du -X skip.txt .",
	}
	for _, cmd := range legit {
		plan, err := CheckExec(strings.Fields(cmd), testPolicy)
		if err != nil {
			t.Errorf("%q refused: %v", cmd, err)
			continue
		}
		if plan.Argv[0] != strings.Fields(cmd)[0] {
			t.Errorf("%q: plan runs %q", cmd, plan.Argv)
		}
	}
}

// TestCheckExecPlan: what the site checks again, and grep's added excludes.
func TestCheckExecPlan(t *testing.T) {
	plan, err := CheckExec([]string{"grep", "-r", "--include=*.py", "needle", "--", "src"}, ExecPolicy{WorkDir: "/w"})
	if err == nil {
		t.Fatalf("a glob in --include is still a shell metacharacter: %+v", plan)
	}
	plan, err = CheckExec([]string{"grep", "-rn", "needle", "--", "src", "-x"}, ExecPolicy{WorkDir: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Paths) != 2 || plan.Paths[0] != (PathCheck{"src", true}) || plan.Paths[1] != (PathCheck{"-x", true}) {
		t.Errorf("paths %+v", plan.Paths)
	}
	dd := -1
	ex := -1
	for i, a := range plan.Argv {
		if a == "--" && dd < 0 {
			dd = i
		}
		if a == "--exclude=*[tT][oO][kK][eE][nN]*" {
			ex = i
		}
	}
	if ex < 0 || dd < 0 || ex > dd || plan.Argv[len(plan.Argv)-1] != "-x" {
		t.Errorf("excludes must come before the caller's --: %q", plan.Argv)
	}
	plan, err = CheckExec([]string{"cat", "-n", "a", "b"}, ExecPolicy{WorkDir: "/w"})
	if err != nil || len(plan.Paths) != 2 || plan.Paths[0].Tree || strings.Join(plan.Argv, " ") != "cat -n a b" {
		t.Errorf("cat: %+v %v", plan, err)
	}
	plan, err = CheckExec([]string{"grep", "-e", "-r", "x.out"}, ExecPolicy{WorkDir: "/w"})
	if err != nil || len(plan.Paths) != 1 || plan.Paths[0].Tree {
		t.Errorf("-e takes -r as its pattern, so the read is not recursive: %+v %v", plan, err)
	}
	if _, err := CheckExec([]string{"cat", "x"}, ExecPolicy{}); err == nil || !strings.Contains(err.Error(), "no absolute workdir") {
		t.Errorf("relative path without a workdir: %v", err)
	}
	if _, err := CheckExec([]string{"cat", "/etc/os-release"}, ExecPolicy{}); err != nil {
		t.Errorf("absolute path without a workdir: %v", err)
	}
}

func TestParseArgs(t *testing.T) {
	cases := []struct {
		prog, args string
		opts       string // canonical names joined by space, values after '='
		operands   string
		err        string
	}{
		{"tail", "-n1 x", "lines=1", "x", ""},
		{"tail", "-n 1 x", "lines=1", "x", ""},
		{"tail", "-qn1 x", "quiet lines=1", "x", ""},
		{"tail", "--lines=3 x", "lines=3", "x", ""},
		{"tail", "--lin 3 x", "lines=3", "x", ""},
		{"tail", "x -n 2", "lines=2", "x", ""},
		{"tail", "-- -n x", "", "-n x", ""},
		{"tail", "-", "", "-", ""},
		{"head", "-20 x", "NUM=20", "x", ""},
		{"head", "-vn5 x", "verbose lines=5", "x", ""},
		{"grep", "-C2 -e x y", "context=2 regexp=x", "y", ""},
		{"grep", "-e-r y", "regexp=-r", "y", ""},
		{"grep", "--colo x", "color=", "x", ""},
		{"grep", "--col=never x", "color=never", "x", ""},
		{"grep", "--re x", "", "", "ambiguous"},
		{"grep", "--regexp", "", "", "needs a value"},
		{"grep", "-e", "", "", "needs a value"},
		{"cat", "--number=3 x", "", "", "takes no value"},
		{"cat", "--", "", "", ""},
		{"cat", "--=x", "", "", "empty long option"},
		{"ls", "-Fl x", "classify l", "x", ""},
		{"ls", "-w80 -T 4", "width=80 tabsize=4", "", ""},
	}
	for _, c := range cases {
		s := fileReaders[c.prog]
		p, err := parseArgs(c.prog, s, strings.Fields(c.args))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s %s: error %v, want %q", c.prog, c.args, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %s: %v", c.prog, c.args, err)
			continue
		}
		var got []string
		for i, d := range p.opts {
			n := d.name
			if d.arg != noArg {
				n += "=" + p.values[i]
			}
			got = append(got, n)
		}
		if strings.Join(got, " ") != c.opts || strings.Join(p.operands, " ") != c.operands {
			t.Errorf("%s %s: opts %q operands %q, want %q %q", c.prog, c.args, got, p.operands, c.opts, c.operands)
		}
	}
}

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pat, s string
		want   bool
	}{
		{"*/.ssh/*", "/home/u/.ssh/id_rsa", true}, {"*/.ssh/*", "/home/u/.ssh", false}, {"*/.ssh", "/home/u/.ssh", true},
		{"/proc/*/*", "/proc/1/environ", true}, {"/proc/*/*", "/proc/cpuinfo", false}, {"/proc/*/*", "/proc/1/task/2/environ", true},
		{"*token*", "tokens.json", true}, {"*token*", "tok", false}, {"id_*", "id_ed25519", true}, {"id_*", "xid_", false},
		{"*.pem", "a.pem", true}, {"*.pem", "a.pem.txt", false}, {"", "", true}, {"*", "", true}, {"a", "", false},
		{"*/.globus*", "/h/.globus_compute/x", true}, {"**a", "bba", true}, {"*a*b*c", "xaxbxc", true}, {"*a*b*c", "xaxbx", false},
	}
	for _, c := range cases {
		if got := globMatch(c.pat, c.s); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v", c.pat, c.s, got)
		}
	}
}

func TestCleanPutPathRefusalKinds(t *testing.T) {
	for _, c := range []struct {
		wd, name string
		size     int
		kind     RefusalKind
	}{
		{"/w", "../x", 1, RefusedInvalid}, {"/w", "", 1, RefusedInvalid}, {"/w", "/etc/passwd", 1, RefusedForbidden},
		{"", "x", 1, RefusedForbidden}, {"/w", "x", MaxPutFile + 1, RefusedTooLarge},
	} {
		_, err := CleanPutPath(c.wd, c.name, c.size)
		var re *RefusedError
		if !errors.As(err, &re) || re.Kind != c.kind {
			t.Errorf("CleanPutPath(%q, %q, %d) = %v, want kind %d", c.wd, c.name, c.size, err, c.kind)
		}
	}
}

// harmless are options that change only how output looks; adding them must never
// turn a refusal into an acceptance.
var harmless = map[string][]string{
	"grep": {"-n", "-i", "-H", "--color=never", "-s", "-c"}, "cat": {"-n", "-A", "--number"}, "head": {"-n", "5", "-v"},
	"tail": {"-n", "5", "-q", "--lines=2"}, "ls": {"-l", "-a", "-h", "--color=never"}, "du": {"-h", "-s", "-c"},
	"find": {"-print", "-type", "f"}, "wc": {"-l", "-c"}, "stat": {"-t"}, "file": {"-b"},
}

var hostileSeeds = []string{
	"grep -r -h -e . /home/u/.config", "grep -rh . /home", "cat /proc/self/environ", "tail -fn1 x", "tail --foll x",
	"cat /home/u/.ssh/id_ed25519", "find / -name x", "du -a /home/u", "ls -R /home/u", "grep -e . --recursive /",
	"cat ./x/../../.ssh/config", "head /home/u/.globus/t.json", "wc --files0-from=/home/u/.ssh/id_rsa", "tail -F x",
	"grep --recur . /etc", "cat /xdg/cfg/mosaic/token",
}

// FuzzCheckExec: no panics on any command line, and a refused command stays
// refused with harmless options inserted anywhere (in front of a value they would
// change its meaning, so they go only between whole arguments).
func FuzzCheckExec(f *testing.F) {
	for i, s := range hostileSeeds {
		f.Add(s, uint8(i), uint8(i*7), uint8(i*3))
	}
	f.Add("tail -n1 -- -f", uint8(0), uint8(0), uint8(0))
	f.Add("grep -e -r --directories=rec x", uint8(1), uint8(2), uint8(3))
	f.Fuzz(func(t *testing.T, cmd string, seed, opt, pos uint8) {
		argv := strings.Fields(cmd)
		plan, err := CheckExec(argv, testPolicy)
		if err == nil {
			if len(plan.Argv) == 0 || plan.Argv[0] != argv[0] {
				t.Fatalf("%q: plan %q", cmd, plan.Argv)
			}
			for _, pc := range plan.Paths {
				if abs, ok := normalise(pc.Path, testPolicy); !ok || denied(abs, testPolicy) != "" {
					t.Fatalf("%q accepted but reads %q", cmd, pc.Path)
				}
			}
		} else if !errors.Is(err, ErrRefused) {
			t.Fatalf("%q: %v is not a refusal", cmd, err)
		}
		base := strings.Fields(hostileSeeds[int(seed)%len(hostileSeeds)])
		if _, err := CheckExec(base, testPolicy); err == nil {
			t.Fatalf("seed %q accepted", base)
		}
		h := harmless[base[0]]
		o := h[int(opt)%len(h)]
		extra := []string{o}
		if (o == "-n" && base[0] != "grep") || o == "-type" {
			extra = append(extra, map[string]string{"-n": "5", "-type": "f"}[o])
		}
		// Insert after the program name and any leading options, before operands
		// and never between an option and its value.
		at := 1 + int(pos)%len(base)
		if base[0] == "find" {
			at = len(base) // find's expression comes last
		}
		if at > 1 && at < len(base) && strings.HasPrefix(base[at-1], "-") && !strings.Contains(base[at-1], "=") && len(base[at-1]) == 2 {
			at-- // the previous option may take this argument as its value
		}
		mut := append(append(append([]string{}, base[:at]...), extra...), base[at:]...)
		if _, err := CheckExec(mut, testPolicy); err == nil {
			t.Fatalf("%q is refused but %q is accepted", base, mut)
		}
	})
}

// TestExecScriptOnSite runs the site-side wrapper with sh, as a remote login node
// would (home and XDG directories known only there): symlinks into the site's
// Mosaic config directory, trees containing $HOME, and relative paths without a
// workdir are refused with the nonce; accepted commands run in the workdir.
func TestExecScriptOnSite(t *testing.T) {
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	cfg := filepath.Join(tmp, "xdgcfg")
	for _, d := range []string{filepath.Join(home, "work"), filepath.Join(cfg, "mosaic")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(cfg, "mosaic", "sites.yaml"), []byte("site-config\n"), 0o600)
	os.WriteFile(filepath.Join(home, "work", "ok.txt"), []byte("fine\n"), 0o600)
	os.Symlink(filepath.Join(cfg, "mosaic", "sites.yaml"), filepath.Join(home, "work", "cfg.yaml"))
	os.Symlink(cfg, filepath.Join(home, "work", "cfglink"))
	os.WriteFile(filepath.Join(home, "ID_RSA"), []byte("needle-key\n"), 0o600)
	os.Symlink(filepath.Join(home, "ID_RSA"), filepath.Join(home, "work", "notes.txt"))
	os.WriteFile(filepath.Join(home, "work", "API.Token"), []byte("needle-token\n"), 0o600)
	run := func(workdir string, argv ...string) (string, string, int) {
		t.Helper()
		pol := ExecPolicy{WorkDir: workdir} // remote: home unknown here
		plan, err := CheckExec(argv, pol)
		if err != nil {
			t.Fatalf("%q refused here, want it checked on the site: %v", argv, err)
		}
		site := siteArgv(plan, pol, "NONCE")
		cmd := exec.Command(site[0], site[1:]...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + cfg}
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err = cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		return out.String(), errb.String(), code
	}
	for _, c := range []struct {
		wd   string
		argv []string
		why  string
	}{
		{filepath.Join(home, "work"), []string{"cat", "cfg.yaml"}, "which Mosaic never reads"},
		{home, []string{"grep", "-r", "x", "."}, "contains your home directory"},
		{filepath.Join(home, "work"), []string{"grep", "-r", "x", "cfglink"}, "outside the workdir"},
		{filepath.Join(home, "work"), []string{"ls", "cfglink/mosaic"}, "which Mosaic never reads"},
		{filepath.Join(tmp, "missing"), []string{"cat", "ok.txt"}, "does not exist on the site"},
		{filepath.Join(home, "work"), []string{"cat", "notes.txt"}, "looks like a key"},
	} {
		out, errOut, code := run(c.wd, c.argv...)
		if code != 125 || !strings.HasPrefix(errOut, "NONCE ") || !strings.Contains(errOut, c.why) || out != "" {
			t.Errorf("%q in %s: exit %d stdout %q stderr %q, want a site refusal mentioning %q", c.argv, c.wd, code, out, errOut, c.why)
		}
	}
	if out, errOut, code := run(filepath.Join(home, "work"), "cat", "ok.txt"); code != 0 || out != "fine\n" {
		t.Errorf("cat in the workdir: %d %q %q", code, out, errOut)
	}
	if out, errOut, code := run(filepath.Join(home, "work"), "grep", "-r", "needle", "."); strings.Contains(out, "needle-token") {
		t.Errorf("grep -r read a token file named in upper case: %d %q %q", code, out, errOut)
	}
	if out, errOut, code := run(filepath.Join(home, "work"), "tail", "-n1", "--", "ok.txt"); code != 0 || out != "fine\n" {
		t.Errorf("tail -- in the workdir: %d %q %q", code, out, errOut)
	}
}

// TestExecPolicyProtected: on a local site the paths the core resolved from its
// configuration (WithProtected: a token file or env file named only in an env file,
// never in the process environment) are refused; on a remote site they mean nothing.
func TestExecPolicyProtected(t *testing.T) {
	tmp := t.TempDir()
	tok := filepath.Join(tmp, "conf", "apikeyfile")
	envFile := filepath.Join(tmp, "settings.txt")
	for _, kind := range []string{"local", "ssh"} {
		sys := site.System{Name: "x", Kind: kind, Host: "h", WorkDir: filepath.Join(tmp, "w")}
		p, err := New(sys, WithProtected(tok, envFile))
		if err != nil {
			t.Fatal(err)
		}
		pol := p.execPolicy()
		for _, f := range []string{tok, envFile} {
			_, err := CheckExec([]string{"cat", f}, pol)
			if kind == "local" && (err == nil || !strings.Contains(err.Error(), "Mosaic")) {
				t.Errorf("local: cat %s: %v, want a refusal", f, err)
			}
			if kind == "ssh" && err != nil {
				t.Errorf("ssh: cat %s: %v; the core's paths are not the site's", f, err)
			}
		}
		if _, err := CheckExec([]string{"grep", "-r", "x", tmp}, ExecPolicy{WorkDir: tmp, Protected: pol.Protected}); kind == "local" && err == nil {
			t.Errorf("local: a tree containing the token file is searched")
		}
	}
}
