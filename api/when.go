package api

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// DefaultWakeFailAfter is how many failed wake checks in a row are surfaced, unless the
// schedule says (WakeConditions.FailAfter).
const DefaultWakeFailAfter = 3

// WhenFlags are a schedule's wake conditions as flags: agentctl schedule add and when,
// and chat's /agent schedule when, read the same ones into the same WakeConditions.
// The daemon checks what they name (paths, URLs, lines) and says what to fix.
type WhenFlags struct {
	Changed, URLs, Commands []string
	Any, All, Network       bool
	OnFailure               string
	FailAfter               int
	// None clears the conditions (schedule when only): every firing wakes the model.
	None bool
}

// Register adds the flags to fs; none adds --when-none too (for changing a schedule).
func (f *WhenFlags) Register(fs *flag.FlagSet, none bool) {
	fs.Func("when-changed", "wake the model only when this file or folder `PATH` changed since the last run (repeatable; relative to the agent's workspace)",
		func(s string) error { f.Changed = append(f.Changed, s); return nil })
	fs.Func("when-url", "wake the model only when this page's content changed (`URL`, repeatable; fetched as read_webpage fetches)",
		func(s string) error { f.URLs = append(f.URLs, s); return nil })
	fs.Func("when", "wake the model only when this shell `COMMAND` exits 0, run in the agent's sandbox; its output is what the run starts from (repeatable)",
		func(s string) error { f.Commands = append(f.Commands, s); return nil })
	fs.BoolVar(&f.Network, "when-network", false, "let the --when commands reach the network the agent's config grants (without it they run offline)")
	fs.BoolVar(&f.Any, "when-any", false, "wake when any condition says so (the default)")
	fs.BoolVar(&f.All, "when-all", false, "wake only when every condition says so")
	fs.StringVar(&f.OnFailure, "when-failed", "", "`POLICY` once checks keep failing: skip (the default) or wake")
	fs.IntVar(&f.FailAfter, "when-failed-after", 0, "how many failed checks in a row (`N`, default 3) are told to the delivery channel and then follow --when-failed")
	if none {
		fs.BoolVar(&f.None, "when-none", false, "remove the conditions: every firing wakes the model")
	}
}

// Given reports whether any of the flags was given.
func (f *WhenFlags) Given() bool {
	return len(f.Changed)+len(f.URLs)+len(f.Commands) > 0 || f.Any || f.All || f.Network || f.OnFailure != "" || f.FailAfter != 0 || f.None
}

// Conditions are the flags as WakeConditions (nil when none is given), or what is wrong
// with how they combine.
func (f *WhenFlags) Conditions() (*WakeConditions, error) {
	c := WakeConditions{Changed: f.Changed, URLs: f.URLs, Commands: f.Commands, Network: f.Network, All: f.All, OnFailure: f.OnFailure, FailAfter: f.FailAfter}
	none := len(c.Changed)+len(c.URLs)+len(c.Commands) == 0
	switch {
	case f.None && f.Given() && !(none && !f.Any && !f.All && !f.Network && f.OnFailure == "" && f.FailAfter == 0):
		return nil, errors.New("--when-none removes the conditions: give it alone")
	case f.None:
		return &WakeConditions{}, nil
	case f.Any && f.All:
		return nil, errors.New("--when-any and --when-all: give one (any wakes the model when one condition says so, all when every one does)")
	case f.Any && none:
		return nil, errors.New("--when-any combines conditions, and none is given: add --when-changed PATH, --when-url URL or --when 'COMMAND'")
	case !f.Given():
		return nil, nil
	}
	return &c, nil
}

// String is the conditions in the flags' words, for schedule show and logs.
func (c WakeConditions) String() string {
	if len(c.Changed)+len(c.URLs)+len(c.Commands) == 0 {
		return "none: every firing wakes the model"
	}
	var parts []string
	for _, p := range c.Changed {
		parts = append(parts, "--when-changed "+QuoteWord(p))
	}
	for _, u := range c.URLs {
		parts = append(parts, "--when-url "+QuoteWord(u))
	}
	for _, line := range c.Commands {
		parts = append(parts, "--when "+QuoteWord(line))
	}
	if c.Network {
		parts = append(parts, "--when-network")
	}
	if c.All {
		parts = append(parts, "--when-all")
	}
	if c.OnFailure == "wake" {
		parts = append(parts, "--when-failed wake")
	}
	if c.FailAfter != 0 && c.FailAfter != DefaultWakeFailAfter {
		parts = append(parts, fmt.Sprintf("--when-failed-after %d", c.FailAfter))
	}
	return strings.Join(parts, " ")
}

// QuoteWord is s as a shell word: as it is when that is safe, else in single quotes.
func QuoteWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
