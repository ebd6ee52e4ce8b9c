// Package shellquote builds POSIX shell command lines from argument vectors. It is the
// one place where Mosaic turns argv into text for a remote shell: OpenSSH concatenates
// its command arguments with spaces and the login node runs the result with `$SHELL -c`,
// so every argument must be quoted exactly once.
package shellquote

import "strings"

// Quote returns s quoted for a POSIX shell (sh, bash, dash, zsh, ksh): arguments made
// only of characters no shell treats specially are returned as is, everything else is
// wrapped in single quotes, each embedded single quote being written as a closing quote,
// a backslash-escaped quote and an opening quote. The empty string becomes a pair of
// single quotes.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	if isSafe(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2 + 3*strings.Count(s, "'"))
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			b.WriteString(`'\''`)
			continue
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('\'')
	return b.String()
}

// Join quotes every argument with Quote and joins them with single spaces, so that a
// POSIX shell running the result with `sh -c` sees exactly argv.
func Join(argv ...string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		parts[i] = Quote(a)
	}
	return strings.Join(parts, " ")
}

// isSafe reports whether s consists only of bytes that need no quoting in any POSIX
// shell word position. '=' is allowed only in options ("--gres=gpu:2"): a bare NAME=value
// word in command position would be taken for a variable assignment. '~' is never safe
// (tilde expansion).
func isSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-' || c == '_' || c == '.' || c == '/' || c == ',' || c == ':' || c == '@' || c == '%' || c == '+':
		case c == '=' && s[0] == '-':
		default:
			return false
		}
	}
	return true
}
