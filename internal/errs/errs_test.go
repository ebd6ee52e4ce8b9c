package errs

import (
	"errors"
	"fmt"
	"testing"
)

func TestMarkKeepsMessageAndChain(t *testing.T) {
	base := fmt.Errorf("sbatch: error: Socket timed out on send/recv operation: %w", ErrSiteDown)
	m := Mark(base, ErrTransient, ErrOutcomeUnknown)
	if m.Error() != base.Error() {
		t.Fatalf("message changed: %q, want %q", m.Error(), base.Error())
	}
	for _, want := range []error{base, ErrSiteDown, ErrTransient, ErrOutcomeUnknown} {
		if !errors.Is(m, want) {
			t.Errorf("errors.Is(marked, %v) = false", want)
		}
	}
	if errors.Is(m, ErrNeedsLogin) {
		t.Error("a mark that was not given matches")
	}
	wrapped := fmt.Errorf("delta: submit t1: %w", m)
	if !errors.Is(wrapped, ErrOutcomeUnknown) {
		t.Error("a mark is lost when the marked error is wrapped again")
	}
}

func TestMarkNilAndNoMarks(t *testing.T) {
	if Mark(nil, ErrTransient) != nil {
		t.Fatal("Mark(nil) is not nil")
	}
	e := errors.New("x")
	if Mark(e) != e {
		t.Fatal("Mark without marks must return err itself")
	}
	if errors.Is(Mark(e), ErrTransient) {
		t.Fatal("unmarked error matches ErrTransient")
	}
}
