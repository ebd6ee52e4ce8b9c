package model

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Length limits of task text, in characters (Unicode code points, not bytes: a name of
// 43 "€" is 43 characters).
const (
	MaxNameChars        = 128
	MaxDescriptionChars = 20_000
	MaxCommandChars     = 64 << 10
	MaxScriptChars      = 1 << 20
	MaxLineChars        = 4096 // one-line values: images, paths, accounts, env names
	MaxEnvValueChars    = 64 << 10
)

// CheckLine checks one line of text that reaches a batch script, a terminal or a log:
// valid UTF-8, at most maxChars characters (0 = no limit), and no control characters
// at all — no NUL, no newline, tab or carriage return, no other C0 or C1 control, no
// DEL — and no Unicode bidirectional overrides, which make text display differently
// from what runs. field names the value in the error.
func CheckLine(field, s string, maxChars int) error {
	return checkText(field, s, maxChars, false)
}

// CheckText checks multi-line text such as a command or a script body: like CheckLine
// but newline (\n) and tab (\t) are allowed. Carriage returns are refused: a script
// saved with Windows line endings fails on the login node with "$'\r': command not
// found", so it is better refused here with a hint (dos2unix).
func CheckText(field, s string, maxChars int) error {
	return checkText(field, s, maxChars, true)
}

func checkText(field, s string, maxChars int, multiline bool) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not valid UTF-8; give plain text", field)
	}
	n := 0
	for _, r := range s {
		n++
		switch {
		case multiline && (r == '\n' || r == '\t'):
		case r == 0:
			return fmt.Errorf("%s contains a NUL byte (character %d); remove it", field, n)
		case r == '\r':
			if multiline {
				return fmt.Errorf("%s contains a carriage return (character %d); use Unix line endings (dos2unix)", field, n)
			}
			return fmt.Errorf("%s contains a carriage return (character %d); it must be one line", field, n)
		case r == '\n':
			return fmt.Errorf("%s contains a newline (character %d); it must be one line", field, n)
		case unicode.IsControl(r):
			return fmt.Errorf("%s contains the control character %U (character %d); remove it", field, r, n)
		case isFormatControl(r):
			return fmt.Errorf("%s contains the bidirectional-text control %U (character %d); remove it", field, r, n)
		}
	}
	if maxChars > 0 && n > maxChars {
		return fmt.Errorf("%s is %d characters; at most %d", field, n, maxChars)
	}
	return nil
}

// isFormatControl reports the Unicode bidirectional embedding, override and isolate
// controls (U+202A..U+202E, U+2066..U+2069) and the line/paragraph separators.
func isFormatControl(r rune) bool {
	return (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) || r == 0x2028 || r == 0x2029
}

// CheckName checks a task name: not blank, at most MaxNameChars characters, one line.
func CheckName(name string) error {
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("name is empty; give the task a short name")
	}
	return CheckLine("name", name, MaxNameChars)
}
