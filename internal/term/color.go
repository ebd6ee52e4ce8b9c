// Package term decides whether output is coloured and paints it: the one place for
// NO_COLOR (https://no-color.org), --color and the terminal check.
package term

import (
	"fmt"
	"io"
	"os"

	"github.com/mattn/go-isatty"
)

// Modes of --color.
const (
	Auto   = "auto"   // colour when the writer is a terminal and NO_COLOR is unset or empty
	Always = "always" // colour whatever the writer is
	Never  = "never"
)

// ParseMode checks a --color value ("" is Auto).
func ParseMode(s string) (string, error) {
	switch s {
	case "", Auto:
		return Auto, nil
	case Always, Never:
		return s, nil
	}
	return "", fmt.Errorf("--color %q: want auto, always or never", s)
}

// Color reports whether to colour what goes to w under mode: never with Never; always
// with Always; with Auto only when NO_COLOR is absent or empty (no-color.org: "present
// and not an empty string" disables) and w is itself a terminal — look at the real
// file, not a writer wrapped around it (pass the *os.File).
func Color(w io.Writer, mode string, getenv func(string) string) bool {
	switch mode {
	case Never:
		return false
	case Always:
		return true
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	if getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// Paint wraps s in the SGR code (e.g. "1;32") when on.
func Paint(on bool, code, s string) string {
	if !on {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}
