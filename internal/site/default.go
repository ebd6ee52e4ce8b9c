package site

import (
	_ "embed"
	"fmt"
)

//go:embed default.yaml
var defaultYAML []byte

// DefaultYAML returns the embedded default catalog's source text.
func DefaultYAML() []byte { return append([]byte(nil), defaultYAML...) }

// Default returns a fresh copy of the embedded default catalog: the simulated
// federation of Delta, DeltaAI, Anvil, Vista, Frontera and Lonestar6. Path is "".
// It panics only if the embedded file is invalid, which the package tests rule out.
func Default() *Catalog {
	c, err := Parse("default.yaml", defaultYAML)
	if err != nil {
		panic(fmt.Sprintf("site: embedded default catalog is invalid: %v", err))
	}
	c.Path = ""
	return c
}
