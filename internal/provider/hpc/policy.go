package hpc

import (
	"fmt"
	"path"
	"sort"
	"strings"
)

// MaxPutFile is the largest file PutFile uploads.
const MaxPutFile = 2 << 20

// MaxExecOutput is how much of an Exec's stdout and stderr is returned.
const MaxExecOutput = 256 << 10

// shellMeta are characters refused in Exec arguments. Arguments are never interpreted
// by a shell (they are quoted), but refusing them keeps requests honest: globs,
// pipes, redirections and substitutions would not do what the caller expects.
const shellMeta = "`$;&|<>(){}[]*?!~'\"\\\n\r\t\x00"

// argRule checks a program's arguments; it returns a refusal reason or "".
type argRule func(args []string) string

func anyArgs([]string) string { return "" }

// firstWord requires the first non-option argument to be one of words.
func firstWord(words ...string) argRule {
	return func(args []string) string {
		for _, a := range args {
			if strings.HasPrefix(a, "-") {
				continue
			}
			for _, w := range words {
				if strings.EqualFold(a, w) {
					return ""
				}
			}
			return fmt.Sprintf("only the read-only subcommands %s are allowed, not %q", strings.Join(words, ", "), a)
		}
		return fmt.Sprintf("a read-only subcommand (%s) is required", strings.Join(words, ", "))
	}
}

// denyFlags refuses the listed options (exact or with "=value").
func denyFlags(flags ...string) argRule {
	return func(args []string) string {
		for _, a := range args {
			for _, f := range flags {
				if a == f || strings.HasPrefix(a, f+"=") {
					return fmt.Sprintf("option %s changes state or never ends", f)
				}
			}
		}
		return ""
	}
}

// onlyArgs allows just the listed arguments (or prefixes ending in '=').
func onlyArgs(allowed ...string) argRule {
	return func(args []string) string {
	next:
		for _, a := range args {
			for _, ok := range allowed {
				if a == ok || (strings.HasSuffix(ok, "=") && strings.HasPrefix(a, ok)) {
					continue next
				}
			}
			return fmt.Sprintf("argument %q is not allowed; allowed: %s", a, strings.Join(allowed, " "))
		}
		return ""
	}
}

// execAllowlist is the read-only programs Exec may run and their argument rules.
var execAllowlist = map[string]argRule{
	// Slurm
	"sinfo": anyArgs, "squeue": anyArgs, "sacct": anyArgs, "sshare": anyArgs, "sprio": anyArgs, "sstat": anyArgs,
	"scontrol": firstWord("show"), "sacctmgr": firstWord("show", "list"),
	// PBS
	"qstat":    anyArgs,
	"pbsnodes": denyFlags("-o", "-r", "-c", "-C", "-N", "-d", "-D"),
	// the system
	"hostname": onlyArgs("-f", "-s"), "uname": anyArgs, "id": anyArgs, "whoami": anyArgs, "date": onlyArgs("-u", "-R", "-Iseconds", "--utc"),
	"nproc": anyArgs, "lscpu": anyArgs, "free": anyArgs, "df": anyArgs, "du": anyArgs, "quota": anyArgs, "printenv": anyArgs,
	"which": anyArgs, "ls": anyArgs, "stat": anyArgs, "file": anyArgs, "wc": anyArgs, "cat": anyArgs, "head": anyArgs, "grep": anyArgs,
	"tail":       denyFlags("-f", "-F", "--follow", "--retry"),
	"find":       denyFlags("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"),
	"nvidia-smi": onlyArgs("-L", "-q", "-i", "--query-gpu=", "--format=", "--id="),
	"rocm-smi":   onlyArgs("--showproductname", "--showmeminfo", "vram", "--showuse", "-i"),
	"python3":    onlyArgs("--version", "-V"), "python": onlyArgs("--version", "-V"),
	"apptainer": onlyArgs("--version", "version"), "singularity": onlyArgs("--version", "version"),
}

// sensitive are path fragments Exec refuses to read (keys, tokens, credentials).
var sensitive = []string{".ssh", "id_rsa", "id_ed25519", "id_ecdsa", ".gnupg", ".netrc", ".pgpass", "shadow", "munge.key",
	".globus", "credentials", "token", "secret", ".kube", ".aws", ".docker/config"}

// CheckExec decides whether argv may run as a look-around command: an allowlisted
// read-only program, no path to the program, no shell metacharacters, no credential
// files, and arguments its rule accepts. The error explains the refusal.
func CheckExec(argv []string) error {
	if len(argv) == 0 {
		return fmt.Errorf("refused: empty command")
	}
	prog := argv[0]
	if strings.Contains(prog, "/") {
		return fmt.Errorf("refused: give the program name (e.g. %q), not a path", path.Base(prog))
	}
	rule, ok := execAllowlist[prog]
	if !ok {
		return fmt.Errorf("refused: %q is not on the read-only allowlist (%s)", prog, allowedNames())
	}
	for _, a := range argv[1:] {
		if i := strings.IndexAny(a, shellMeta); i >= 0 {
			return fmt.Errorf("refused: argument %q contains %q; no shell runs the command, so quotes, globs, pipes, redirections and substitutions are not allowed", a, a[i:i+1])
		}
		low := strings.ToLower(a)
		for _, s := range sensitive {
			if strings.Contains(low, s) {
				return fmt.Errorf("refused: argument %q looks like a credential or key file (%s)", a, s)
			}
		}
	}
	if why := rule(argv[1:]); why != "" {
		return fmt.Errorf("refused: %s: %s", prog, why)
	}
	return nil
}

func allowedNames() string {
	names := make([]string, 0, len(execAllowlist))
	for n := range execAllowlist {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, " ")
}

// CleanPutPath resolves name (relative to workdir, or absolute inside it) to an
// absolute path confined to workdir, and checks the size limit. Symlinks are checked
// on the site (see PutFile), since only the site can resolve them.
func CleanPutPath(workdir, name string, size int) (string, error) {
	if size > MaxPutFile {
		return "", fmt.Errorf("refused: %d bytes is over the %d-byte (2 MiB) limit for uploads; stage large files with the site's transfer tools", size, MaxPutFile)
	}
	if workdir == "" || !path.IsAbs(workdir) {
		return "", fmt.Errorf("refused: the system has no absolute workdir to confine uploads to")
	}
	if name == "" || strings.ContainsAny(name, "\x00\n\r") {
		return "", fmt.Errorf("refused: file name %q is empty or has control characters", name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", fmt.Errorf("refused: %q contains '..'; give a path inside the workdir", name)
		}
	}
	root := path.Clean(workdir)
	p := name
	if !path.IsAbs(p) {
		p = path.Join(root, p)
	}
	p = path.Clean(p)
	if p == root || !strings.HasPrefix(p, root+"/") {
		return "", fmt.Errorf("refused: %q is outside the workdir %s", name, root)
	}
	return p, nil
}
