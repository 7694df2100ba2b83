// Pins the load tools the tests and benchmarks build (scripts/install-load-tools.sh).
// A module of its own so their dependencies are locked in go.sum.
//go:build tools

package tools

import (
	_ "github.com/bojand/ghz/cmd/ghz"
	_ "github.com/tsenart/vegeta/v12"
)
