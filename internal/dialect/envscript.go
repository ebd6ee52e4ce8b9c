package dialect

import "github.com/mosaic-hpc/mosaic/internal/transport/shellquote"

// SourceEnvScript renders the bash lines that source a site's env script
// (module loads, conda activation) and stop the job when it fails, so that the
// job's command never runs in a half-set-up environment. A failure is either a
// non-zero status of `source` (a missing file, a failing last command, a
// `return 1`) or an `exit` inside the script, which would end the job shell
// before any check after it: an EXIT trap catches both and prints
//
//	mosaic: env script /path/env.sh failed (exit N)
//
// on stderr, then ends the job with status 1 (also after an `exit 0`: the
// command did not run). The trap is removed once the script has been sourced,
// together with any EXIT trap the env script set. "" renders nothing.
func SourceEnvScript(path string) string {
	if path == "" {
		return ""
	}
	q := shellquote.Quote(path)
	// "$?" is read by printf's arguments, before printf runs: the status the shell
	// is exiting with.
	onExit := `printf 'mosaic: env script %s failed (exit %d)\n' ` + q + ` "$?" >&2; exit 1`
	// Not `source X || exit`: the left side of || runs with errexit off, so an
	// env script's own `set -e` would stop working.
	return "trap " + shellquote.Quote(onExit) + " EXIT\n" +
		"source " + q + "\n" +
		`mosaic_rc=$?; [ "$mosaic_rc" = 0 ] || exit "$mosaic_rc"; unset mosaic_rc` + "\n" +
		"trap - EXIT\n"
}
