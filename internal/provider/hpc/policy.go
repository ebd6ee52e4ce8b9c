package hpc

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/dialect/dialects"
)

// MaxPutFile is the largest file PutFile uploads.
const MaxPutFile = 2 << 20

// MaxExecOutput is how much of an Exec's stdout and stderr is returned.
const MaxExecOutput = 256 << 10

// shellMeta are characters refused in Exec arguments. Arguments are never interpreted
// by a shell (they are quoted), but refusing them keeps requests honest: globs,
// pipes, redirections and substitutions would not do what the caller expects.
const shellMeta = "`$;&|<>(){}[]*?!~'\"\\\n\r\t\x00"

// argRule checks the arguments of a program that reads no files the caller names;
// it returns a refusal reason or "".
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

// denyLetters refuses the listed short option letters anywhere in a cluster
// (pbsnodes -oCx n1 is -o -C x), also inside an attached value: stricter, never
// looser.
func denyLetters(letters, why string) argRule {
	return func(args []string) string {
		for _, a := range args {
			if len(a) > 1 && a[0] == '-' && a[1] != '-' {
				if i := strings.IndexAny(a[1:], letters); i >= 0 {
					return fmt.Sprintf("option -%c (in %q) %s", a[1+i], a, why)
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

// jobEnvWhy explains refusing job scripts and job environments: they carry whatever
// was exported into the job (campaign --forward variables, task env).
const jobEnvWhy = "prints job scripts or job environments, which carry exported keys; use `mosaic task ID` for Mosaic's own jobs"

// all combines rules; the first refusal wins.
func all(rules ...argRule) argRule {
	return func(args []string) string {
		for _, r := range rules {
			if why := r(args); why != "" {
				return why
			}
		}
		return ""
	}
}

// denyLong refuses long options naming one of names, also abbreviated (Slurm parses
// with getopt_long, so --env is --env-vars).
func denyLong(why string, names ...string) argRule {
	return func(args []string) string {
		for _, a := range args {
			n, ok := strings.CutPrefix(a, "--")
			if !ok {
				continue
			}
			n, _, _ = strings.Cut(n, "=")
			for _, name := range names {
				if n != "" && strings.HasPrefix(name, n) {
					return fmt.Sprintf("option --%s %s", name, why)
				}
			}
		}
		return ""
	}
}

// denyShortLetter refuses a short option letter anywhere in a cluster (-XB).
func denyShortLetter(c byte, why string) argRule {
	return func(args []string) string {
		for _, a := range args {
			if len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.IndexByte(a[1:], c) >= 0 {
				return fmt.Sprintf("option -%c %s", c, why)
			}
		}
		return ""
	}
}

// noBatchScript refuses scontrol -dd (twice --details), which adds the batch script to
// `show job`.
func noBatchScript(args []string) string {
	n := 0
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "--"):
			if v := strings.TrimPrefix(a, "--"); v != "" && strings.HasPrefix("details", v) {
				n++
			}
		case len(a) > 1 && a[0] == '-':
			n += strings.Count(a[1:], "d")
		}
	}
	if n >= 2 {
		return "repeated -d/--details " + jobEnvWhy
	}
	return ""
}

// qstatValueLetters are qstat's options that take a value: in a cluster, what
// follows one of them is its value (qstat -uQ,alice is -u "Q,alice", not -Q).
const qstatValueLetters = "uFDW"

// noJobVariables refuses qstat -f for jobs: it lists each job's Variable_List (its
// environment). Queue and server details (-Q -f, -B -f) are fine. An "f" anywhere in
// a cluster counts (stricter); -Q and -B count only as options, not inside a value.
func noJobVariables(args []string) string {
	full, other := false, false
	for _, a := range args {
		if len(a) > 1 && a[0] == '-' && a[1] != '-' {
			full = full || strings.Contains(a[1:], "f")
			opts := a[1:]
			if i := strings.IndexAny(opts, qstatValueLetters); i >= 0 {
				opts = opts[:i]
			}
			other = other || strings.ContainsAny(opts, "QB")
		}
	}
	if full && !other {
		return "job details (-f) include each job's Variable_List, its environment; use qstat without -f, qstat -Q -f, or `mosaic task ID`"
	}
	return ""
}

// flagsOnly allows the listed options and any operand (which's program names).
func flagsOnly(allowed ...string) argRule {
	return func(args []string) string {
		for _, a := range args {
			if strings.HasPrefix(a, "-") && !slices.Contains(allowed, a) {
				return fmt.Sprintf("option %q is not allowed; allowed: %s", a, strings.Join(allowed, " "))
			}
		}
		return ""
	}
}

// execAllowlist is the read-only programs that read no file the caller names, and
// their argument rules. Programs that do read named files (cat, grep, ls, find, ...)
// are in fileReaders and find, and are parsed option by option.
var execAllowlist = map[string]argRule{
	// Slurm
	"sinfo": anyArgs, "squeue": anyArgs, "sshare": anyArgs, "sprio": anyArgs, "sstat": anyArgs,
	"sacct":    all(denyLong(jobEnvWhy, "env-vars", "batch-script"), denyShortLetter('B', jobEnvWhy)),
	"scontrol": all(firstWord("show"), noBatchScript), "sacctmgr": firstWord("show", "list"),
	// PBS
	"qstat":    noJobVariables,
	"pbsnodes": denyLetters("orcCNdD", "changes state"),
	// the system
	"hostname": onlyArgs("-f", "-s"), "uname": anyArgs, "id": anyArgs, "whoami": anyArgs, "date": onlyArgs("-u", "-R", "-Iseconds", "--utc"),
	"nproc": anyArgs, "lscpu": onlyArgs("-e", "-p", "-J", "--json", "--extended", "--parse"), "free": anyArgs, "quota": anyArgs,
	"which":      flagsOnly("-a"),
	"nvidia-smi": onlyArgs("-L", "-q", "-i", "--query-gpu=", "--format=", "--id="),
	"rocm-smi":   onlyArgs("--showproductname", "--showmeminfo", "vram", "--showuse", "-i"),
	"python3":    onlyArgs("--version", "-V"), "python": onlyArgs("--version", "-V"),
	"apptainer": onlyArgs("--version", "version"), "singularity": onlyArgs("--version", "version"),
}

// envPrinters print the environment, which on a login node or the core's own host
// holds API keys and tokens.
var envPrinters = map[string]bool{"env": true, "printenv": true, "set": true, "export": true, "declare": true,
	"typeset": true, "compgen": true, "alias": true, "readonly": true, "local": true}

// A denyRule matches a normalised absolute path (pattern with '/': the whole path;
// without: the last element), ignoring case (ID_RSA, .TOKEN, .SSH on a
// case-insensitive file system): patterns are lower case and are matched against
// the lower-cased path. In patterns '*' matches any run of characters, slashes
// included, the same as in a shell `case` (the site-side check uses them verbatim
// there, on the lower-cased path). No other glob characters are used.
type denyRule struct{ pat, why string }

const (
	whySSH    = "SSH keys and configuration"
	whyMosaic = "Mosaic's own token, credentials and state"
	whyCloud  = "cloud and registry credentials"
	whyProc   = "per-process state under /proc (environment, command line, memory) holds the keys of whatever runs there"
	whyName   = "its name looks like a key, token or credential file"
	whyHist   = "shell and REPL histories hold commands typed with keys and passwords in them"
	// Shell start-up files are where people put `export OPENAI_API_KEY=...`; what
	// look-around needs from them (modules, python, PATH) `mosaic env SYSTEM` reports.
	whyRC     = "shell start-up files often export API keys; `mosaic env SYSTEM` shows modules, python and containers"
	whySystem = "system secrets"
	// Mosaic writes <tag><the dialect's ScriptExt> into the workdir with `export K=V` lines.
	whyJobScript = "Mosaic's job scripts export the task's env and a campaign's forwarded variables, which may be keys; `mosaic task ID` shows the command"
)

var denyRules = append([]denyRule{
	{"*/.ssh", whySSH}, {"*/.ssh/*", whySSH},
	{"*/.globus*", "Globus credentials"},
	{"*/.config/mosaic", whyMosaic}, {"*/.config/mosaic/*", whyMosaic},
	{"*/.local/state/mosaic", whyMosaic}, {"*/.local/state/mosaic/*", whyMosaic},
	{"*/.gnupg", "GnuPG keys"}, {"*/.gnupg/*", "GnuPG keys"},
	{"*/.aws", whyCloud}, {"*/.aws/*", whyCloud}, {"*/.kube", whyCloud}, {"*/.kube/*", whyCloud},
	{"*/.docker/config.json", whyCloud}, {"*/.azure", whyCloud}, {"*/.azure/*", whyCloud},
	{"*/.config/gcloud", whyCloud}, {"*/.config/gcloud/*", whyCloud}, {"*/.config/gh/*", whyCloud},
	{"/proc/*/*", whyProc},
	{"/etc/shadow*", whySystem}, {"/etc/gshadow*", whySystem}, {"/etc/munge/*", whySystem}, {"/etc/ssh/ssh_host_*", whySystem},
	{"*/slurmdbd.conf", whySystem}, {"/dev/mem", whySystem}, {"/dev/kmem", whySystem}, {"/dev/port", whySystem},
	{"*/.config/rclone/*", whyCloud}, {"*/.kaggle/*", whyCloud}, {"*/.m2/settings*.xml", whyCloud},
	{"*/.config/pip/pip.conf", whyCloud}, {"*/.pip/pip.conf", whyCloud},
	{"*netrc*", whyName}, {".pgpass", whyName}, {".env", whyName}, {".env.*", whyName}, {".envrc", whyName},
	{".npmrc", whyName}, {".yarnrc*", whyName}, {".pypirc", whyName}, {".git-credentials", whyName},
	{".my.cnf", whyName}, {".s3cfg", whyName}, {".boto", whyName}, {".vault-token", whyName}, {"*password*", whyName},
	{"*_history", whyHist}, {".history", whyHist}, {".histfile", whyHist}, {".lesshst", whyHist}, {".viminfo", whyHist},
	{".bashrc", whyRC}, {".bash_profile", whyRC}, {".bash_login", whyRC}, {".bash_logout", whyRC}, {".profile", whyRC},
	{".zshrc", whyRC}, {".zshenv", whyRC}, {".zprofile", whyRC}, {".zlogin", whyRC}, {".kshrc", whyRC}, {".cshrc", whyRC},
	{".tcshrc", whyRC}, {".login", whyRC}, {".bash_aliases", whyRC},
	{"*token*", whyName}, {"*secret*", whyName}, {"*credential*", whyName}, {"id_*", whyName},
	{"*.pem", whyName}, {"*.key", whyName}, {"*.p12", whyName}, {"*.pfx", whyName}, {"*.keytab", whyName},
	{"*.kdbx", whyName}, {"krb5cc*", whyName},
}, jobScriptRules()...)

// jobScriptRules hide every dialect's job scripts (*.sbatch, *.pbs, ...).
func jobScriptRules() []denyRule {
	var out []denyRule
	for _, d := range dialects.All() {
		out = append(out, denyRule{"*" + d.ScriptExt(), whyJobScript})
	}
	return out
}

// grepExcludeDirs are directory names recursive grep skips even inside the workdir.
var grepExcludeDirs = []string{".ssh", ".globus*", ".gnupg", ".aws", ".kube", ".azure", ".docker", ".kaggle"}

// anyCase turns a lower-case pattern into a glob matching it in any case, for grep's
// --exclude (fnmatch, case-sensitive): "id_*" becomes "[iI][dD]_*".
func anyCase(pat string) string {
	var b strings.Builder
	for _, r := range pat {
		if u := strings.ToUpper(string(r)); u != string(r) {
			b.WriteString("[" + string(r) + u + "]")
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// globMatch reports whether s matches pat, where '*' matches any run of characters
// (including '/') and everything else matches itself.
func globMatch(pat, s string) bool {
	// Iterative matcher with one backtrack point, linear in len(pat)*len(s).
	p, i, star, mark := 0, 0, -1, 0
	for i < len(s) {
		switch {
		case p < len(pat) && pat[p] == '*':
			star, mark = p, i
			p++
		case p < len(pat) && pat[p] == s[i]:
			p++
			i++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pat) && pat[p] == '*' {
		p++
	}
	return p == len(pat)
}

// ExecPolicy is what the look-around check needs to know about the system.
type ExecPolicy struct {
	// WorkDir is the system's workdir: relative paths resolve against it (the command
	// runs there) and recursive readers stay inside it. "" refuses both.
	WorkDir string
	// Home is the login user's home directory when it is known here (local sites);
	// on remote sites the check on the site uses its $HOME.
	Home string
	// Protected are absolute files and directories never read nor searched (on a
	// local site: the core's own config and state directories, token, store, env
	// and sites files and ssh identity files, from its resolved configuration).
	Protected []string
}

// PathCheck is one path a command reads, for the check on the site.
type PathCheck struct {
	Path string // as given (relative to the workdir, or absolute)
	Tree bool   // read recursively: must stay inside the workdir
}

// ExecPlan is an accepted look-around command: what to run and which paths the
// site must resolve (symlinks) and check again before running it.
type ExecPlan struct {
	Argv  []string
	Paths []PathCheck
}

// CheckExec decides whether argv may run as a look-around command, by what it can
// read: an allowlisted read-only program (no path to the program, nothing that
// prints the environment), options parsed the way the program parses them, no
// follow modes, every path it reads normalised and checked against the credential
// rules, recursive readers only inside the workdir, and no shell metacharacters.
// The error is a *RefusedError saying why and what to do instead.
func CheckExec(argv []string, pol ExecPolicy) (ExecPlan, error) {
	if len(argv) == 0 {
		return ExecPlan{}, refuse(RefusedInvalid, "empty command")
	}
	prog := argv[0]
	if strings.Contains(prog, "/") {
		return ExecPlan{}, refuse(RefusedInvalid, "give the program name (e.g. %q), not a path", path.Base(prog))
	}
	if envPrinters[prog] {
		return ExecPlan{}, refuse(RefusedForbidden, "%s prints the environment, which holds API keys and tokens; ask for what you need instead: `mosaic env SYSTEM` shows python, modules, containers and accounts, `which python3` a program", prog)
	}
	for _, a := range argv {
		for _, r := range a {
			if r < 0x20 || r == 0x7f {
				return ExecPlan{}, refuse(RefusedInvalid, "argument %q contains a control character; no shell runs the command, so quotes, globs, pipes, redirections and substitutions are not allowed", a)
			}
		}
	}
	plan := ExecPlan{Argv: argv}
	args := argv[1:]
	var err error
	switch {
	case prog == "find":
		plan.Paths, err = checkFind(args)
	case fileReaders[prog] != nil:
		plan, err = checkReader(prog, fileReaders[prog], args)
	case execAllowlist[prog] != nil:
		if why := execAllowlist[prog](args); why != "" {
			err = refuse(RefusedForbidden, "%s: %s", prog, why)
		}
	default:
		err = refuse(RefusedForbidden, "%q is not on the read-only allowlist (%s)", prog, allowedNames())
	}
	if err != nil {
		return ExecPlan{}, err
	}
	for _, pc := range plan.Paths {
		if err := checkPath(pc, pol); err != nil {
			return ExecPlan{}, err
		}
	}
	for _, a := range argv[1:] {
		if i := strings.IndexAny(a, shellMeta); i >= 0 {
			return ExecPlan{}, refuse(RefusedInvalid, "argument %q contains %q; no shell runs the command, so quotes, globs, pipes, redirections and substitutions are not allowed", a, a[i:i+1])
		}
	}
	return plan, nil
}

// checkReader parses a file reader's arguments and lists the paths it reads.
func checkReader(prog string, s *progSpec, args []string) (ExecPlan, error) {
	p, err := parseArgs(prog, s, args)
	if err != nil {
		return ExecPlan{}, err
	}
	tree := s.tree
	var paths []PathCheck
	for i, d := range p.opts {
		switch d.role {
		case roleRefused:
			return ExecPlan{}, refuse(RefusedForbidden, "%s: option %s: %s", prog, optName(d), d.why)
		case roleFollow:
			return ExecPlan{}, refuse(RefusedForbidden, "%s: option %s: %s", prog, optName(d), followWhy)
		case roleRecursive:
			tree = true
		case roleDirectories:
			if strings.HasPrefix("recurse", p.values[i]) && p.values[i] != "" {
				tree = true
			}
		case roleFileValue, rolePatternFile:
			if p.values[i] != "-" {
				paths = append(paths, PathCheck{Path: p.values[i]})
			}
		}
	}
	for _, d := range p.opts {
		if d.role == roleDeref && tree {
			return ExecPlan{}, refuse(RefusedForbidden, "%s: option %s follows every symlink inside the tree, also out of the workdir", prog, optName(d))
		}
	}
	ops := p.operands
	if s.operands == operandsGrep && !p.patternSet {
		if len(ops) == 0 {
			return ExecPlan{}, refuse(RefusedInvalid, "%s: no pattern given", prog)
		}
		ops = ops[1:]
	}
	if len(ops) == 0 && tree {
		ops = []string{"."} // grep -r PATTERN, du: the working directory, which is the workdir
	}
	for _, o := range ops {
		if s.noPlus && strings.HasPrefix(o, "+") {
			return ExecPlan{}, refuse(RefusedInvalid, "%s: operand %q uses the obsolete +N syntax; use -n +N", prog, o)
		}
		if o == "-" {
			continue // standard input, which is empty
		}
		paths = append(paths, PathCheck{Path: o, Tree: tree})
	}
	argv := append([]string{prog}, args...)
	if prog == "grep" && tree {
		// Skip key- and token-named files and credential directories inside the tree
		// too. They go after the caller's options (for grep the last matching
		// --include/--exclude wins) and before a "--" that ends them.
		var ex []string
		for _, r := range denyRules {
			if !strings.Contains(r.pat, "/") {
				ex = append(ex, "--exclude="+anyCase(r.pat))
			}
		}
		for _, d := range grepExcludeDirs {
			ex = append(ex, "--exclude-dir="+anyCase(d))
		}
		cut := len(args)
		if p.endOptions >= 0 {
			cut = p.endOptions
		}
		argv = append(append(append([]string{prog}, args[:cut]...), ex...), args[cut:]...)
	}
	return ExecPlan{Argv: argv, Paths: paths}, nil
}

func optName(d optDef) string {
	if len(d.name) == 1 {
		return "-" + d.name
	}
	return "--" + d.name
}

// checkFind parses find's leading options, start points and expression.
func checkFind(args []string) ([]PathCheck, error) {
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case findLeading[a]:
		case a == "-L":
			return nil, refuse(RefusedForbidden, "find: -L follows every symlink, also out of the workdir")
		case a == "-D" || strings.HasPrefix(a, "-O"):
			return nil, refuse(RefusedInvalid, "find: debug and optimisation options (%s) are not needed for look-around", a)
		default:
			goto starts
		}
	}
starts:
	var paths []PathCheck
	for ; i < len(args) && !strings.HasPrefix(args[i], "-") && args[i] != ","; i++ {
		paths = append(paths, PathCheck{Path: args[i], Tree: true})
	}
	if len(paths) == 0 {
		paths = []PathCheck{{Path: ".", Tree: true}}
	}
	// Every token that looks like a predicate is checked, including ones that are
	// really values (-name -delete is refused): stricter, never looser.
	for ; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue
		}
		why, ok := findPreds[a]
		if !ok && strings.HasPrefix(a, "-newer") && len(a) == len("-newerXY") {
			ok = true
		}
		if !ok {
			return nil, refuse(RefusedInvalid, "find: %s is not a predicate Mosaic knows to be read-only", a)
		}
		if why != "" {
			return nil, refuse(RefusedForbidden, "find: %s %s", a, why)
		}
	}
	return paths, nil
}

// normalise makes p absolute and clean: ~ and $HOME become the home directory (or a
// stand-in when it is not known here), relative paths start at the workdir.
func normalise(p string, pol ExecPolicy) (string, bool) {
	home := pol.Home
	if home == "" {
		home = "/~home" // unknown here; the site checks with its real $HOME
	}
	switch {
	case p == "~" || p == "$HOME" || p == "${HOME}":
		p = home
	case strings.HasPrefix(p, "~/"):
		p = home + p[1:]
	case strings.HasPrefix(p, "$HOME/"):
		p = home + p[len("$HOME"):]
	case strings.HasPrefix(p, "${HOME}/"):
		p = home + p[len("${HOME}"):]
	case strings.HasPrefix(p, "~"):
		p = "/home/" + p[1:] // ~user/...
	}
	if !path.IsAbs(p) {
		if pol.WorkDir == "" || !path.IsAbs(pol.WorkDir) {
			return p, false
		}
		p = path.Join(pol.WorkDir, p)
	}
	return path.Clean(p), true
}

// denied returns why the normalised path abs may not be read, or "".
func denied(abs string, pol ExecPolicy) string {
	for _, d := range pol.Protected {
		d = path.Clean(d)
		if abs == d || strings.HasPrefix(abs, d+"/") {
			return whyMosaic + " (" + d + ")"
		}
	}
	low := strings.ToLower(abs)
	base := path.Base(low)
	for _, r := range denyRules {
		if strings.Contains(r.pat, "/") {
			if globMatch(r.pat, low) {
				return r.why
			}
		} else if globMatch(r.pat, base) {
			return r.why + " (" + r.pat + ")"
		}
	}
	return ""
}

// checkPath applies the credential rules and, for trees, the workdir confinement to
// one path, after normalising it. Symlinks are resolved on the site (execScript).
func checkPath(pc PathCheck, pol ExecPolicy) error {
	abs, ok := normalise(pc.Path, pol)
	if !ok {
		return refuse(RefusedInvalid, "%q is relative, but the system has no absolute workdir to resolve it against; give an absolute path", pc.Path)
	}
	if why := denied(abs, pol); why != "" {
		return refuse(RefusedForbidden, "%q (%s) may hold secrets: %s; look-around never reads it", pc.Path, abs, why)
	}
	if !pc.Tree {
		return nil
	}
	wd := path.Clean(pol.WorkDir)
	if pol.WorkDir == "" || !path.IsAbs(wd) {
		return refuse(RefusedForbidden, "recursive readers (grep -r, find, du, ls -R) stay inside the system's workdir, and it has none")
	}
	if abs != wd && !strings.HasPrefix(abs, wd+"/") {
		return refuse(RefusedForbidden, "%q (%s) is outside the workdir %s; recursive readers (grep -r, find, du, ls -R) stay inside the workdir", pc.Path, abs, wd)
	}
	for _, d := range append([]string{pol.Home}, pol.Protected...) {
		if d = path.Clean(d); d != "." && (abs == "/" || d == abs || strings.HasPrefix(d, abs+"/")) {
			return refuse(RefusedForbidden, "%q (%s) contains %s, which holds keys and tokens; name a subdirectory", pc.Path, abs, d)
		}
	}
	return nil
}

// sitePatterns are the deny rules in the form execScript reads: "dir:D" for a
// protected directory, "name:P" for a last-element pattern, else a path pattern.
func sitePatterns(pol ExecPolicy) []string {
	var out []string
	for _, d := range pol.Protected {
		out = append(out, "dir:"+path.Clean(d))
	}
	for _, r := range denyRules {
		if strings.Contains(r.pat, "/") {
			out = append(out, r.pat)
		} else {
			out = append(out, "name:"+r.pat)
		}
	}
	return out
}

// execScript runs a look-around command on the site after checking, there, every
// path it reads once symlinks are resolved (realpath), against the same rules
// (passed in as data), in the same call: a symlink in the workdir pointing into
// ~/.ssh is refused, and so is a recursive reader whose tree resolves outside the
// workdir or contains the home directory. A refusal is printed after $1, a random
// nonce the command cannot know, and exits 125.
// Arguments: nonce workdir N pattern×N M (kind path)×M -- argv...
const execScript = `set -u
nonce=$1 wd=$2 nd=$3
shift 3
no() { printf '%s %s\n' "$nonce" "$*" >&2; exit 125; }
deny=
while [ "$nd" -gt 0 ]; do deny="$deny$1
"; shift; nd=$((nd-1)); done
np=$1
shift
root=
if [ -n "$wd" ] && cd -- "$wd" 2>/dev/null; then root=$(pwd -P); fi
set -f
nl='
'
# Mosaic's own directories where this site's XDG variables put them.
if [ -n "${XDG_CONFIG_HOME:-}" ]; then deny="${deny}dir:${XDG_CONFIG_HOME%/}/mosaic$nl"; fi
if [ -n "${XDG_STATE_HOME:-}" ]; then deny="${deny}dir:${XDG_STATE_HOME%/}/mosaic$nl"; fi
while [ "$np" -gt 0 ]; do
  kind=$1 p=$2
  shift 2
  np=$((np-1))
  case $p in /*) ;; *) [ -n "$root" ] || no "$p is relative, but the workdir $wd does not exist on the site; give an absolute path";; esac
  r=$(realpath -m -- "$p" 2>/dev/null) || r=$(readlink -f -- "$p" 2>/dev/null) || r=
  [ -n "$r" ] || no "cannot resolve $p on the site (no realpath or readlink -f there)"
  if [ "$kind" = t ]; then
    [ -n "$root" ] || no "recursive readers (grep -r, find, du, ls -R) stay inside the workdir, and $wd does not exist on the site"
    case $r/ in "$root"/*) ;; *) no "$p resolves to $r, outside the workdir $root; recursive readers (grep -r, find, du, ls -R) stay inside the workdir";; esac
    if [ -n "${HOME:-}" ] && [ "$HOME" != / ]; then
      case ${HOME%/}/ in "$r"/*) no "$p resolves to $r, which contains your home directory $HOME; name a subdirectory";; esac
    fi
  fi
  lr=$(printf '%s\n' "$r" | tr 'ABCDEFGHIJKLMNOPQRSTUVWXYZ' 'abcdefghijklmnopqrstuvwxyz')
  IFS=$nl
  for d in $deny; do
    case $d in
    dir:*) d=${d#dir:}
      case $r/ in "$d"/*) no "$p resolves to $r, inside $d, which Mosaic never reads";; esac
      if [ "$kind" = t ]; then case $d/ in "$r"/*) no "$p resolves to $r, which contains $d, which Mosaic never reads";; esac; fi;;
    name:*) case ${lr##*/} in ${d#name:}) no "$p resolves to $r, whose name looks like a key, token or credential file (${d#name:})";; esac;;
    *) case $lr in $d) no "$p resolves to $r, which may hold secrets ($d)";; esac;;
    esac
  done
  unset IFS
done
shift
unset POSIXLY_CORRECT _POSIX2_VERSION GREP_OPTIONS
exec "$@"`

// siteArgv wraps plan for execScript with the given nonce.
func siteArgv(plan ExecPlan, pol ExecPolicy, nonce string) []string {
	pats := sitePatterns(pol)
	argv := []string{"sh", "-c", execScript, "sh", nonce, pol.WorkDir, strconv.Itoa(len(pats))}
	argv = append(argv, pats...)
	argv = append(argv, strconv.Itoa(len(plan.Paths)))
	for _, pc := range plan.Paths {
		kind := "r"
		if pc.Tree {
			kind = "t"
		}
		argv = append(argv, kind, pc.Path)
	}
	argv = append(argv, "--")
	return append(argv, plan.Argv...)
}

func allowedNames() string {
	names := make([]string, 0, len(execAllowlist)+len(fileReaders)+1)
	for n := range execAllowlist {
		names = append(names, n)
	}
	for n := range fileReaders {
		names = append(names, n)
	}
	names = append(names, "find")
	sort.Strings(names)
	return strings.Join(names, " ")
}

// CleanPutPath resolves name (relative to workdir, or absolute inside it) to an
// absolute path confined to workdir, and checks the size limit. Refusals are
// *RefusedError. Symlinks are checked
// on the site (see PutFile), since only the site can resolve them.
func CleanPutPath(workdir, name string, size int) (string, error) {
	if size > MaxPutFile {
		return "", refuse(RefusedTooLarge, "%d bytes is over the %d-byte (2 MiB) limit for uploads; stage large files with the site's transfer tools", size, MaxPutFile)
	}
	if workdir == "" || !path.IsAbs(workdir) {
		return "", refuse(RefusedForbidden, "the system has no absolute workdir to confine uploads to")
	}
	if name == "" || strings.ContainsAny(name, "\x00\n\r") {
		return "", refuse(RefusedInvalid, "file name %q is empty or has control characters", name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", refuse(RefusedInvalid, "%q contains '..'; give a path inside the workdir", name)
		}
	}
	root := path.Clean(workdir)
	p := name
	if !path.IsAbs(p) {
		p = path.Join(root, p)
	}
	p = path.Clean(p)
	if p == root || !strings.HasPrefix(p, root+"/") {
		return "", refuse(RefusedForbidden, "%q is outside the workdir %s", name, root)
	}
	return p, nil
}
