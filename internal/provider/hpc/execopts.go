package hpc

import (
	"sort"
	"strings"
)

// This file is an option parser with GNU getopt_long's rules, so that look-around
// decides by what a command will actually do, not by how its arguments are spelled:
// short option clusters (-fn1 is -f -n 1), values attached or in the next argument,
// -NUM counts, long options abbreviated to any unique prefix (--foll is --follow),
// --opt=value, and "--" ending the options. Options may follow operands (GNU
// permutes them; the wrapper unsets POSIXLY_CORRECT so the site parses the same way).

// optArg says whether an option takes a value.
type optArg uint8

const (
	noArg       optArg = iota
	requiredArg        // -n 5, -n5, --lines=5, --lines 5
	optionalArg        // --color, --color=auto (never the next argument)
)

// optRole is what an option (or its value) makes the program do, as far as the
// policy cares.
type optRole uint8

const (
	roleNone         optRole = iota
	roleRecursive            // read whole directory trees (grep -r, ls -R)
	roleDeref                // follow every symlink inside a tree (grep -R, find -L, du -L)
	roleFollow               // never end (tail -f)
	roleFileValue            // the value is a file the program reads (grep -f, wc --files0-from)
	rolePatternValue         // the value is a pattern, so no operand is (grep -e)
	rolePatternFile          // both: a file of patterns (grep -f)
	roleDirectories          // grep -d ACTION: "recurse" means -r
	roleRefused              // refused outright; the reason is in optDef.why
)

// optDef is one option of one program.
type optDef struct {
	name string // canonical long name, or the letter for short-only options
	arg  optArg
	role optRole
	why  string // for roleRefused
}

// operandStyle says how a program's operands are read.
type operandStyle uint8

const (
	operandsNone  operandStyle = iota // no file operands (which)
	operandsPaths                     // every operand is a path it reads (cat, ls, du)
	operandsGrep                      // first operand is the pattern unless -e/-f gave one
)

// progSpec is a file-reading program's options and operand style.
type progSpec struct {
	short    map[byte]optDef
	long     map[string]optDef
	digits   bool // -NUM is a count (head -5, tail -20, grep -3)
	operands operandStyle
	tree     bool // always reads whole trees (du)
	noPlus   bool // refuse operands starting with '+' (obsolete tail +5f syntax)
}

// opt builds an optDef; short letters and long names are given separately in progOpts().
func opt(name string, arg optArg, role optRole) optDef {
	return optDef{name: name, arg: arg, role: role}
}

func refusedOpt(name string, arg optArg, why string) optDef {
	return optDef{name: name, arg: arg, role: roleRefused, why: why}
}

// progOpts builds a progSpec from short letters (each mapped to the long name it is an
// alias of, or to itself) and long definitions.
func progOpts(style operandStyle, long []optDef, short map[byte]string) *progSpec {
	s := &progSpec{short: map[byte]optDef{}, long: map[string]optDef{}, operands: style}
	for _, d := range long {
		s.long[d.name] = d
	}
	for c, name := range short {
		if d, ok := s.long[name]; ok {
			if d.arg == optionalArg {
				d.arg = noArg // GNU short aliases of --opt[=VALUE] take no value (ls -F)
			}
			s.short[c] = d
			continue
		}
		// A short-only option: "name" is "x" (flag), "x:" (value), optionally
		// followed by a role letter after a comma (see shortOnly).
		s.short[c] = shortOnly(c, name)
	}
	return s
}

// shortOnly decodes a short-only option: ":" means it takes a value; ",r" recursive,
// ",d" deref, ",f" follow, ",F" file value, ",!reason" refused.
func shortOnly(c byte, code string) optDef {
	d := optDef{name: string(c)}
	main, role, _ := strings.Cut(code, ",")
	if strings.HasSuffix(main, ":") {
		d.arg = requiredArg
	}
	switch {
	case role == "r":
		d.role = roleRecursive
	case role == "d":
		d.role = roleDeref
	case role == "f":
		d.role = roleFollow
	case role == "F":
		d.role = roleFileValue
	case strings.HasPrefix(role, "!"):
		d.role, d.why = roleRefused, role[1:]
	}
	return d
}

// parsedArgs is what parseArgs found.
type parsedArgs struct {
	opts       []optDef // in order
	values     []string // values[i] is the value of opts[i] ("" if none)
	operands   []string
	endOptions int  // index in args of the "--" that ended the options, -1 if none
	patternSet bool // -e or -f gave the pattern
}

// parseArgs parses args (without the program name) with spec's options, GNU style.
// The error is a RefusedInvalid explaining the bad option.
func parseArgs(prog string, s *progSpec, args []string) (parsedArgs, error) {
	p := parsedArgs{endOptions: -1}
	add := func(d optDef, v string) {
		p.opts = append(p.opts, d)
		p.values = append(p.values, v)
		if d.role == rolePatternValue || d.role == rolePatternFile {
			p.patternSet = true
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			p.endOptions = i
			p.operands = append(p.operands, args[i+1:]...)
			return p, nil
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			d, err := s.lookupLong(prog, name)
			if err != nil {
				return p, err
			}
			switch d.arg {
			case noArg:
				if hasVal {
					return p, refuse(RefusedInvalid, "%s: option --%s takes no value (%q)", prog, d.name, a)
				}
			case requiredArg:
				if !hasVal {
					if i+1 >= len(args) {
						return p, refuse(RefusedInvalid, "%s: option --%s needs a value", prog, d.name)
					}
					i++
					val = args[i]
				}
			}
			add(d, val)
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				c := a[j]
				if s.digits && c >= '0' && c <= '9' {
					k := j
					for k < len(a) && a[k] >= '0' && a[k] <= '9' {
						k++
					}
					add(optDef{name: "NUM", arg: requiredArg}, a[j:k])
					j = k - 1
					continue
				}
				d, ok := s.short[c]
				if !ok {
					return p, refuse(RefusedInvalid, "%s: option -%c is not one Mosaic knows to be read-only (in %q); see `%s --help` on the site, or use a long option Mosaic allows", prog, c, a, prog)
				}
				switch d.arg {
				case requiredArg:
					v := a[j+1:]
					if v == "" {
						if i+1 >= len(args) {
							return p, refuse(RefusedInvalid, "%s: option -%c needs a value", prog, c)
						}
						i++
						v = args[i]
					}
					add(d, v)
					j = len(a)
				case optionalArg:
					add(d, a[j+1:])
					j = len(a)
				default:
					add(d, "")
				}
			}
		default:
			p.operands = append(p.operands, a)
		}
	}
	return p, nil
}

// lookupLong finds a long option by exact name or unique prefix, like getopt_long:
// an abbreviation is fine when every option it could mean is the same option.
func (s *progSpec) lookupLong(prog, name string) (optDef, error) {
	if name == "" {
		return optDef{}, refuse(RefusedInvalid, "%s: empty long option", prog)
	}
	if d, ok := s.long[name]; ok {
		return d, nil
	}
	var cands []string
	for n := range s.long {
		if strings.HasPrefix(n, name) {
			cands = append(cands, n)
		}
	}
	sort.Strings(cands)
	switch {
	case len(cands) == 0:
		return optDef{}, refuse(RefusedInvalid, "%s: option --%s is not one Mosaic knows to be read-only", prog, name)
	case len(cands) > 1:
		first := s.long[cands[0]]
		for _, c := range cands[1:] {
			if d := s.long[c]; d.role != first.role || d.arg != first.arg || !sameAlias(first.name, d.name) {
				return optDef{}, refuse(RefusedInvalid, "%s: option --%s is ambiguous (--%s)", prog, name, strings.Join(cands, ", --"))
			}
		}
		return first, nil
	}
	return s.long[cands[0]], nil
}

// sameAlias reports whether two long names are spellings of one option.
func sameAlias(a, b string) bool {
	canon := func(n string) string { return strings.ReplaceAll(n, "colour", "color") }
	return canon(a) == canon(b)
}

// Option tables. Only options known to be read-only are listed; anything else is
// refused with a message naming it. The letters follow GNU coreutils, grep and
// findutils (their --help), which is what Linux login nodes run.

var grepSpec = func() *progSpec {
	s := progOpts(operandsGrep, []optDef{
		opt("extended-regexp", noArg, roleNone), opt("fixed-strings", noArg, roleNone), opt("basic-regexp", noArg, roleNone),
		opt("perl-regexp", noArg, roleNone), opt("regexp", requiredArg, rolePatternValue), opt("file", requiredArg, rolePatternFile),
		opt("ignore-case", noArg, roleNone), opt("no-ignore-case", noArg, roleNone), opt("word-regexp", noArg, roleNone),
		opt("line-regexp", noArg, roleNone), opt("null-data", noArg, roleNone), opt("no-messages", noArg, roleNone),
		opt("invert-match", noArg, roleNone), opt("version", noArg, roleNone), opt("help", noArg, roleNone),
		opt("max-count", requiredArg, roleNone), opt("byte-offset", noArg, roleNone), opt("line-number", noArg, roleNone),
		opt("no-line-number", noArg, roleNone),
		opt("line-buffered", noArg, roleNone), opt("with-filename", noArg, roleNone), opt("no-filename", noArg, roleNone),
		opt("label", requiredArg, roleNone), opt("only-matching", noArg, roleNone), opt("quiet", noArg, roleNone),
		opt("silent", noArg, roleNone), opt("binary-files", requiredArg, roleNone), opt("text", noArg, roleNone),
		opt("directories", requiredArg, roleDirectories), opt("devices", requiredArg, roleNone),
		opt("recursive", noArg, roleRecursive),
		refusedOpt("dereference-recursive", noArg, "-R/--dereference-recursive follows every symlink, also out of the workdir; use -r"),
		opt("include", requiredArg, roleNone), opt("exclude", requiredArg, roleNone),
		opt("exclude-from", requiredArg, roleFileValue), opt("exclude-dir", requiredArg, roleNone),
		opt("files-without-match", noArg, roleNone), opt("files-with-matches", noArg, roleNone), opt("count", noArg, roleNone),
		opt("initial-tab", noArg, roleNone), opt("null", noArg, roleNone), opt("before-context", requiredArg, roleNone),
		opt("after-context", requiredArg, roleNone), opt("context", requiredArg, roleNone),
		opt("group-separator", requiredArg, roleNone), opt("no-group-separator", noArg, roleNone),
		opt("color", optionalArg, roleNone), opt("colour", optionalArg, roleNone), opt("binary", noArg, roleNone),
	}, map[byte]string{
		'E': "extended-regexp", 'F': "fixed-strings", 'G': "basic-regexp", 'P': "perl-regexp", 'e': "regexp", 'f': "file",
		'i': "ignore-case", 'y': "ignore-case", 'w': "word-regexp", 'x': "line-regexp", 'z': "null-data", 's': "no-messages",
		'v': "invert-match", 'V': "version", 'm': "max-count", 'b': "byte-offset", 'n': "line-number", 'H': "with-filename",
		'h': "no-filename", 'o': "only-matching", 'q': "quiet", 'a': "text", 'I': "I", 'd': "directories", 'D': "devices",
		'r': "recursive", 'R': "dereference-recursive", 'L': "files-without-match", 'l': "files-with-matches", 'c': "count",
		'T': "initial-tab", 'Z': "null", 'B': "before-context", 'A': "after-context", 'C': "context", 'U': "binary",
	})
	s.digits = true
	return s
}()

var catSpec = progOpts(operandsPaths, []optDef{
	opt("show-all", noArg, roleNone), opt("number-nonblank", noArg, roleNone), opt("show-ends", noArg, roleNone),
	opt("number", noArg, roleNone), opt("squeeze-blank", noArg, roleNone), opt("show-tabs", noArg, roleNone),
	opt("show-nonprinting", noArg, roleNone), opt("help", noArg, roleNone), opt("version", noArg, roleNone),
}, map[byte]string{'A': "show-all", 'b': "number-nonblank", 'e': "e", 'E': "show-ends", 'n': "number", 's': "squeeze-blank",
	't': "t", 'T': "show-tabs", 'u': "u", 'v': "show-nonprinting"})

var headSpec = func() *progSpec {
	s := progOpts(operandsPaths, []optDef{
		opt("bytes", requiredArg, roleNone), opt("lines", requiredArg, roleNone), opt("quiet", noArg, roleNone),
		opt("silent", noArg, roleNone), opt("verbose", noArg, roleNone), opt("zero-terminated", noArg, roleNone),
		opt("help", noArg, roleNone), opt("version", noArg, roleNone),
	}, map[byte]string{'c': "bytes", 'n': "lines", 'q': "quiet", 'v': "verbose", 'z': "zero-terminated"})
	s.digits, s.noPlus = true, true
	return s
}()

// filesFromWhy: names read from a file escape the path checks.
const filesFromWhy = "reads the names of the files to read from a file, where Mosaic cannot check them; name the files on the command line"

// magicWhy: file -m takes a colon-separated list of files or a directory, and prints
// the lines of any it cannot parse as warnings, so it reads any file's contents.
const magicWhy = "-m/--magic-file reads a list of files or a whole directory as magic files and prints their lines; look-around uses the system's magic"

const followWhy = "follow mode never ends; read the file without -f (tail -n 100 FILE), or `mosaic logs` for a task"

var tailSpec = func() *progSpec {
	s := progOpts(operandsPaths, []optDef{
		opt("bytes", requiredArg, roleNone), opt("lines", requiredArg, roleNone), opt("quiet", noArg, roleNone),
		opt("silent", noArg, roleNone), opt("verbose", noArg, roleNone), opt("zero-terminated", noArg, roleNone),
		opt("help", noArg, roleNone), opt("version", noArg, roleNone),
		refusedOpt("follow", optionalArg, followWhy), refusedOpt("retry", noArg, followWhy),
		refusedOpt("pid", requiredArg, followWhy), refusedOpt("sleep-interval", requiredArg, followWhy),
		refusedOpt("max-unchanged-stats", requiredArg, followWhy),
	}, map[byte]string{'c': "bytes", 'n': "lines", 'q': "quiet", 'v': "verbose", 'z': "zero-terminated",
		'f': "follow", 'F': "F,!" + followWhy, 's': "sleep-interval"})
	// -f is --follow=descriptor: short -f takes no value, unlike --follow[=HOW].
	s.short['f'] = refusedOpt("follow", noArg, followWhy)
	s.digits, s.noPlus = true, true
	return s
}()

var wcSpec = progOpts(operandsPaths, []optDef{
	opt("bytes", noArg, roleNone), opt("chars", noArg, roleNone), opt("lines", noArg, roleNone),
	opt("max-line-length", noArg, roleNone), opt("words", noArg, roleNone), refusedOpt("files0-from", requiredArg, filesFromWhy),
	opt("total", requiredArg, roleNone), opt("help", noArg, roleNone), opt("version", noArg, roleNone),
}, map[byte]string{'c': "bytes", 'm': "chars", 'l': "lines", 'L': "max-line-length", 'w': "words"})

var lsSpec = progOpts(operandsPaths, []optDef{
	opt("all", noArg, roleNone), opt("almost-all", noArg, roleNone), opt("author", noArg, roleNone),
	opt("escape", noArg, roleNone), opt("block-size", requiredArg, roleNone), opt("ignore-backups", noArg, roleNone),
	opt("color", optionalArg, roleNone), opt("colour", optionalArg, roleNone), opt("directory", noArg, roleNone),
	opt("dired", noArg, roleNone), opt("classify", optionalArg, roleNone), opt("file-type", noArg, roleNone),
	opt("format", requiredArg, roleNone), opt("full-time", noArg, roleNone), opt("group-directories-first", noArg, roleNone),
	opt("no-group", noArg, roleNone), opt("human-readable", noArg, roleNone), opt("si", noArg, roleNone),
	opt("dereference-command-line", noArg, roleNone), opt("dereference-command-line-symlink-to-dir", noArg, roleNone),
	opt("hide", requiredArg, roleNone), opt("hyperlink", optionalArg, roleNone), opt("indicator-style", requiredArg, roleNone),
	opt("inode", noArg, roleNone), opt("ignore", requiredArg, roleNone), opt("kibibytes", noArg, roleNone),
	opt("dereference", noArg, roleDeref), opt("numeric-uid-gid", noArg, roleNone), opt("literal", noArg, roleNone),
	opt("indicator-slash", noArg, roleNone), opt("hide-control-chars", noArg, roleNone), opt("show-control-chars", noArg, roleNone),
	opt("quote-name", noArg, roleNone), opt("quoting-style", requiredArg, roleNone), opt("reverse", noArg, roleNone),
	opt("recursive", noArg, roleRecursive), opt("size", noArg, roleNone), opt("sort", requiredArg, roleNone),
	opt("time", requiredArg, roleNone), opt("time-style", requiredArg, roleNone), opt("tabsize", requiredArg, roleNone),
	opt("width", requiredArg, roleNone), opt("context", noArg, roleNone), opt("zero", noArg, roleNone),
	opt("help", noArg, roleNone), opt("version", noArg, roleNone),
}, map[byte]string{'a': "all", 'A': "almost-all", 'b': "escape", 'B': "ignore-backups", 'c': "c", 'C': "C", 'd': "directory",
	'D': "dired", 'f': "f", 'F': "classify", 'g': "g", 'G': "no-group", 'h': "human-readable", 'H': "dereference-command-line",
	'i': "inode", 'I': "ignore", 'k': "kibibytes", 'l': "l", 'L': "dereference", 'm': "m", 'n': "numeric-uid-gid",
	'N': "literal", 'o': "o", 'p': "indicator-slash", 'q': "hide-control-chars", 'Q': "quote-name", 'r': "reverse",
	'R': "recursive", 's': "size", 'S': "S", 't': "t", 'T': "tabsize", 'u': "u", 'U': "U", 'v': "v", 'w': "width",
	'x': "x", 'X': "X", 'Z': "context", '1': "1"})

var duSpec = func() *progSpec {
	s := progOpts(operandsPaths, []optDef{
		opt("null", noArg, roleNone), opt("all", noArg, roleNone), opt("apparent-size", noArg, roleNone),
		opt("block-size", requiredArg, roleNone), opt("bytes", noArg, roleNone), opt("total", noArg, roleNone),
		opt("dereference-args", noArg, roleNone), opt("max-depth", requiredArg, roleNone), opt("human-readable", noArg, roleNone),
		opt("inodes", noArg, roleNone), opt("kilobytes", noArg, roleNone),
		refusedOpt("dereference", noArg, "-L/--dereference follows every symlink, also out of the workdir"),
		opt("count-links", noArg, roleNone), opt("megabytes", noArg, roleNone), opt("no-dereference", noArg, roleNone),
		opt("separate-dirs", noArg, roleNone), opt("si", noArg, roleNone), opt("summarize", noArg, roleNone),
		opt("threshold", requiredArg, roleNone), opt("time", optionalArg, roleNone), opt("time-style", requiredArg, roleNone),
		opt("exclude-from", requiredArg, roleFileValue), opt("exclude", requiredArg, roleNone),
		refusedOpt("files0-from", requiredArg, filesFromWhy), opt("one-file-system", noArg, roleNone),
		opt("help", noArg, roleNone), opt("version", noArg, roleNone),
	}, map[byte]string{'0': "null", 'a': "all", 'B': "block-size", 'b': "bytes", 'c': "total", 'D': "dereference-args",
		'd': "max-depth", 'H': "dereference-args", 'h': "human-readable", 'k': "kilobytes", 'L': "dereference",
		'l': "count-links", 'm': "megabytes", 'P': "no-dereference", 'S': "separate-dirs", 's': "summarize",
		't': "threshold", 'X': "exclude-from", 'x': "one-file-system"})
	s.tree = true
	return s
}()

var dfSpec = progOpts(operandsPaths, []optDef{
	opt("all", noArg, roleNone), opt("block-size", requiredArg, roleNone), opt("human-readable", noArg, roleNone),
	opt("si", noArg, roleNone), opt("inodes", noArg, roleNone), opt("local", noArg, roleNone),
	opt("no-sync", noArg, roleNone), opt("sync", noArg, roleNone), opt("output", optionalArg, roleNone),
	opt("portability", noArg, roleNone), opt("total", noArg, roleNone), opt("type", requiredArg, roleNone),
	opt("print-type", noArg, roleNone), opt("exclude-type", requiredArg, roleNone),
	opt("help", noArg, roleNone), opt("version", noArg, roleNone),
}, map[byte]string{'a': "all", 'B': "block-size", 'h': "human-readable", 'H': "si", 'i': "inodes", 'k': "k",
	'l': "local", 'P': "portability", 't': "type", 'T': "print-type", 'x': "exclude-type", 'v': "v"})

var statSpec = progOpts(operandsPaths, []optDef{
	opt("dereference", noArg, roleNone), opt("file-system", noArg, roleNone), opt("cached", requiredArg, roleNone),
	opt("format", requiredArg, roleNone), opt("printf", requiredArg, roleNone), opt("terse", noArg, roleNone),
	opt("help", noArg, roleNone), opt("version", noArg, roleNone),
}, map[byte]string{'L': "dereference", 'f': "file-system", 'c': "format", 't': "terse"})

var fileSpec = progOpts(operandsPaths, []optDef{
	opt("brief", noArg, roleNone), opt("checking-printout", noArg, roleNone),
	refusedOpt("compile", noArg, "-C/--compile writes a magic file"),
	opt("debug", noArg, roleNone), opt("extension", noArg, roleNone), opt("exclude", requiredArg, roleNone),
	opt("exclude-quiet", requiredArg, roleNone), opt("separator", requiredArg, roleNone),
	refusedOpt("files-from", requiredArg, filesFromWhy), opt("no-dereference", noArg, roleNone), opt("mime", noArg, roleNone),
	opt("mime-type", noArg, roleNone), opt("mime-encoding", noArg, roleNone), opt("keep-going", noArg, roleNone),
	opt("list", noArg, roleNone), opt("dereference", noArg, roleNone), refusedOpt("magic-file", requiredArg, magicWhy),
	opt("no-buffer", noArg, roleNone), opt("no-pad", noArg, roleNone), opt("preserve-date", noArg, roleNone),
	opt("parameter", requiredArg, roleNone), opt("raw", noArg, roleNone), opt("special-files", noArg, roleNone),
	opt("uncompress", noArg, roleNone), opt("uncompress-noreport", noArg, roleNone), opt("print0", noArg, roleNone),
	opt("help", noArg, roleNone), opt("version", noArg, roleNone),
}, map[byte]string{'b': "brief", 'c': "checking-printout", 'C': "compile", 'd': "debug", 'e': "exclude", 'F': "separator",
	'f': "files-from", 'h': "no-dereference", 'i': "mime", 'k': "keep-going", 'l': "list", 'L': "dereference",
	'm': "magic-file", 'N': "no-pad", 'n': "no-buffer", 'p': "preserve-date", 'P': "parameter", 'r': "raw",
	's': "special-files", 'S': "S", 'v': "version", 'z': "uncompress", 'Z': "uncompress-noreport", '0': "print0", 'E': "E"})

// fileReaders are the allowlisted programs whose operands are paths.
var fileReaders = map[string]*progSpec{
	"grep": grepSpec, "cat": catSpec, "head": headSpec, "tail": tailSpec, "wc": wcSpec,
	"ls": lsSpec, "du": duSpec, "df": dfSpec, "stat": statSpec, "file": fileSpec,
}

// find's grammar is its own: options, start points, then an expression.
var (
	findLeading = map[string]bool{"-H": true, "-P": true}
	findPreds   = map[string]string{ // predicate -> "" allowed, or why it is refused
		"-name": "", "-iname": "", "-path": "", "-ipath": "", "-wholename": "", "-iwholename": "", "-regex": "",
		"-iregex": "", "-regextype": "", "-type": "", "-xtype": "", "-size": "", "-mtime": "", "-mmin": "", "-atime": "",
		"-amin": "", "-ctime": "", "-cmin": "", "-newer": "", "-anewer": "", "-cnewer": "", "-newermm": "", "-newermt": "",
		"-newerat": "", "-newerct": "", "-used": "", "-user": "", "-group": "", "-uid": "", "-gid": "", "-nouser": "",
		"-nogroup": "", "-perm": "", "-empty": "", "-links": "", "-inum": "", "-samefile": "", "-readable": "",
		"-writable": "", "-executable": "", "-maxdepth": "", "-mindepth": "", "-mount": "", "-xdev": "", "-depth": "",
		"-d": "", "-daystart": "", "-noleaf": "", "-ignore_readdir_race": "", "-noignore_readdir_race": "", "-print": "",
		"-print0": "", "-printf": "", "-ls": "", "-prune": "", "-quit": "", "-true": "", "-false": "", "-and": "",
		"-a": "", "-or": "", "-o": "", "-not": "", "-lname": "", "-ilname": "", "-fstype": "", "-help": "",
		"-version": "", "-warn": "", "-nowarn": "",
		"-exec": "runs a program", "-execdir": "runs a program", "-ok": "runs a program", "-okdir": "runs a program",
		"-delete": "deletes files", "-fprint": "writes a file", "-fprint0": "writes a file", "-fprintf": "writes a file",
		"-fls": "writes a file", "-follow": "follows every symlink, also out of the workdir",
		"-files0-from": "reads start points from a file; name them on the command line",
	}
)
