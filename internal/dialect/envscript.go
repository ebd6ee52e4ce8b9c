package dialect

import (
	"fmt"
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/transport/shellquote"
)

// LastCommandHint is the line printed after "mosaic: env script X failed (exit N)"
// when the env script ran to its end but its last command returned N (%d).
const LastCommandHint = "mosaic: its last command returned %d; if that is expected (e.g. a last line `[ -n \"$X\" ] && export Y=1`), end the env script with `true`"

// trapShadow replaces the shell's `trap` while the env script is sourced (bash
// outside POSIX mode only: there a function may shadow a builtin; dash and bash
// --posix find special builtins first, and dash cannot even parse the definition,
// hence the eval). An EXIT trap the env script sets is kept in mosaic_env_trap
// instead of replacing Mosaic's — which would let `trap cleanup EXIT; exit 0` end
// the job with status 0 and no failure line — and becomes the job's EXIT trap once
// the env script succeeded; every other trap is set at once. Forms of bash's
// trap: `trap [-lpP] [sig...]` (passed on), `trap [--] ACTION SIG...`,
// `trap [--] SIG` and `trap - SIG...` (reset); EXIT is also spelt 0 or in lower case.
// It returns the builtin's status (0 when it only held an EXIT trap back), so a
// `set -e` env script is not stopped by it.
const trapShadow = `trap() {
	local mosaic_a mosaic_s mosaic_rest=()
	case ${1-} in
	--) shift ;;
	-?*) builtin trap "$@"; return ;;
	esac
	if [ $# -eq 0 ]; then builtin trap; return; fi
	if [ $# -eq 1 ]; then mosaic_a=-; else mosaic_a=$1; shift; fi
	for mosaic_s in "$@"; do
		case $mosaic_s in
		[Ee][Xx][Ii][Tt]|0) if [ "$mosaic_a" = - ]; then unset mosaic_env_trap; else mosaic_env_trap=$mosaic_a; fi ;;
		*) mosaic_rest+=("$mosaic_s") ;;
		esac
	done
	if [ ${#mosaic_rest[@]} -gt 0 ]; then builtin trap -- "$mosaic_a" "${mosaic_rest[@]}"; fi
}`

// SourceEnvScript renders the shell lines that source a site's env script
// (module loads, conda activation) and stop the job when it fails, so that the
// job's command never runs in a half-set-up environment. The lines are POSIX sh
// (`.`, not `source`): Mosaic's job scripts run under bash (#!/bin/bash, PBS's
// -S /bin/bash, attach mode's bash -c), but a site may still hand them to sh.
//
// A failure is
//   - a missing or unreadable file: "mosaic: env script X: No such file or
//     directory, or not a readable file; …";
//   - an `exit N` anywhere in it (even exit 0: the command did not run), or its
//     own `set -e` tripping: an EXIT trap prints "mosaic: env script X failed
//     (exit N)";
//   - a non-zero status N of the source itself (its last command failed, or a
//     `return N`): the same line, then LastCommandHint.
//
// Each ends the job with status 1 on stderr. Why a failing last command counts
// (finding 12 of issue 17): the commonest real failure, a `module load` or
// `conda activate` that fails, does not exit — its status is the only sign, and
// with the check limited to `exit`/errexit the agents would start without their
// modules. The price is that a harmless last line such as `[ -n "$X" ] && export
// Y=1` fails too; the hint says how to keep it (end the script with `true`).
//
// An EXIT trap the env script sets is kept: under bash (see trapShadow) it runs
// after Mosaic's failure line when the env script fails, in a subshell so that
// its own `exit` cannot change the job's status 1 (it sees the failing status in
// $?), and becomes the job's EXIT trap when the env script succeeds. Under a
// POSIX sh the env script's EXIT trap replaces Mosaic's (an `exit` after it then
// goes unreported). "" renders nothing.
func SourceEnvScript(path string) string {
	if path == "" {
		return ""
	}
	q := shellquote.Quote(path)
	// `. name` without a slash searches $PATH (bash also the working directory,
	// dash not): a relative env script is the job directory's, as the check reads it.
	src := q
	if !strings.Contains(path, "/") {
		src = shellquote.Quote("./" + path)
	}
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line(`if [ ! -f %[1]s ] || [ ! -r %[1]s ]; then printf 'mosaic: env script %%s: No such file or directory, or not a readable file; fix env_script of this site in the sites catalog\n' %[2]s >&2; printf 'mosaic: env script %%s failed (exit 1)\n' %[2]s >&2; exit 1; fi`, src, q)
	// mosaic_env_exit runs on any exit while the env script is sourced, and after
	// a failed source (mosaic_env_rc set: the lines are printed already).
	line(`mosaic_env_status() { return "$1"; }`)
	line(`mosaic_env_exit() {`)
	line(`	if [ -z "${mosaic_env_rc-}" ]; then printf 'mosaic: env script %%s failed (exit %%d)\n' %s "$1" >&2; fi`, q)
	line(`	if [ -n "${mosaic_env_trap+x}" ]; then (mosaic_env_status "$1"; eval "$mosaic_env_trap"); fi`)
	line(`	exit 1`)
	line(`}`)
	line(`trap 'mosaic_env_exit "$?"' EXIT`)
	line(`if [ -n "${BASH_VERSION-}" ] && ! shopt -oq posix; then eval %s; fi`, shellquote.Quote(trapShadow))
	// Not `. X || …`: the left side of || runs with errexit off, so an env
	// script's own `set -e` would stop working.
	line(`. %s`, src)
	line(`mosaic_env_rc=$?`)
	line(`unset -f trap`)
	line(`if [ "$mosaic_env_rc" != 0 ]; then printf 'mosaic: env script %%s failed (exit %%d)\n'%s'\n' %s "$mosaic_env_rc" "$mosaic_env_rc" >&2; exit 1; fi`,
		shellquote.Quote(LastCommandHint), q)
	line(`if [ -n "${mosaic_env_trap+x}" ]; then trap -- "$mosaic_env_trap" EXIT; else trap - EXIT; fi`)
	line(`unset -f mosaic_env_exit mosaic_env_status; unset mosaic_env_rc mosaic_env_trap`)
	return b.String()
}
