package wake

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
)

// Conditions are a schedule's wake conditions: api.WakeConditions (its fields are
// documented there), as the config file's [[schedules]], the API and the schedules
// table keep them. The zero value has none: every firing wakes the model, as before
// conditions existed.
type Conditions api.WakeConditions

// The values of Conditions.OnFailure.
const (
	OnFailureSkip = "skip"
	OnFailureWake = "wake"
)

// DefaultFailAfter is how many failed checks in a row are surfaced and then follow
// OnFailure, unless the schedule says.
const DefaultFailAfter = api.DefaultWakeFailAfter

// Bounds on conditions.
const (
	maxFailAfter    = 1000
	maxConditions   = 8  // conditions of one schedule
	maxPaths        = 32 // paths of a changed condition
	maxURLBytes     = 2048
	maxCommandBytes = 2000 // execute_shell's own bound on a command line
)

// Empty reports whether there are no conditions: every firing wakes the model.
func (c Conditions) Empty() bool {
	return len(c.Changed)+len(c.URLs)+len(c.Commands) == 0
}

// count is the number of conditions: the changed paths are one.
func (c Conditions) count() int {
	n := len(c.URLs) + len(c.Commands)
	if len(c.Changed) > 0 {
		n++
	}
	return n
}

// Check returns c with its paths cleaned and its defaults filled in, or the first
// problem, naming the fix. It checks the form only: whether a path exists and stays in
// its folder, or a URL's host may be reached, is the Engine's Validate.
func (c Conditions) Check() (Conditions, error) {
	if c.Empty() {
		switch {
		case c.All:
			return c, errors.New("--when-all combines conditions, and none is given: add --when-changed PATH, --when-url URL or --when 'COMMAND'")
		case c.Network:
			return c, errors.New("--when-network lets the --when commands reach the network, and none is given: add --when 'COMMAND', or drop it")
		case c.OnFailure != "" || c.FailAfter != 0:
			return c, errors.New("--when-failed says what a failed check does, and no check is given: add --when-changed, --when-url or --when, or drop it")
		}
		return Conditions{}, nil
	}
	if n := c.count(); n > maxConditions {
		return c, fmt.Errorf("%d conditions: at most %d (all the --when-changed paths count as one)", n, maxConditions)
	}
	if len(c.Changed) > maxPaths {
		return c, fmt.Errorf("--when-changed names %d paths: at most %d; name the folder that holds them instead", len(c.Changed), maxPaths)
	}
	if c.Network && len(c.Commands) == 0 {
		return c, errors.New("--when-network lets the --when commands reach the network, and none is given: add --when 'COMMAND', or drop it")
	}
	out := Conditions{All: c.All, Network: c.Network, OnFailure: c.OnFailure, FailAfter: c.FailAfter}
	var err error
	if out.Changed, err = cleanAll(c.Changed, cleanWatchPath); err != nil {
		return c, err
	}
	if out.URLs, err = cleanAll(c.URLs, checkURL); err != nil {
		return c, err
	}
	if out.Commands, err = cleanAll(c.Commands, func(line string) (string, error) { return line, checkCommand(line) }); err != nil {
		return c, err
	}
	switch out.OnFailure {
	case "":
		out.OnFailure = OnFailureSkip
	case OnFailureSkip, OnFailureWake:
	default:
		return c, fmt.Errorf("--when-failed %q: use skip (a failed check wakes nothing) or wake (it wakes the model, which is told why)", c.OnFailure)
	}
	switch {
	case out.FailAfter == 0:
		out.FailAfter = DefaultFailAfter
	case out.FailAfter < 0 || out.FailAfter > maxFailAfter:
		return c, fmt.Errorf("--when-failed-after %d: give how many failed checks in a row are surfaced, 1 to %d", c.FailAfter, maxFailAfter)
	}
	return out, nil
}

// cleanAll checks and cleans each of list, in order, keeping the first of equal results.
func cleanAll(list []string, clean func(string) (string, error)) ([]string, error) {
	var out []string
	for _, s := range list {
		c, err := clean(s)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// cleanWatchPath checks a --when-changed path's form and cleans it: relative as the file
// commands clean it (commands.CleanPath: no "..", no NUL), or absolute and clean.
func cleanWatchPath(p string) (string, error) {
	switch {
	case strings.HasPrefix(p, "~"):
		return "", fmt.Errorf("--when-changed %q: ~ is not expanded here; give the absolute path (e.g. /home/me/inbox) or one relative to the agent's workspace", p)
	case filepath.IsAbs(p):
		if len(p) > 4096 || strings.IndexByte(p, 0) >= 0 {
			return "", fmt.Errorf("--when-changed: the path %.80q is too long or contains a NUL byte", p)
		}
		clean := filepath.Clean(p)
		if clean == "/" {
			return "", errors.New("--when-changed /: name a folder under one of the agent's read-only paths, not the whole file system")
		}
		return clean, nil
	}
	clean, err := commands.CleanPath(p)
	if err != nil {
		return "", fmt.Errorf("--when-changed: %w", err)
	}
	return clean, nil
}

// checkURL checks a --when-url URL's form: http(s), a host, no credentials (they would be
// stored and shown with the schedule); it returns it trimmed.
func checkURL(raw string) (string, error) {
	s := strings.TrimSpace(raw)
	if len(s) > maxURLBytes {
		return "", fmt.Errorf("--when-url: the URL is %d bytes: at most %d", len(s), maxURLBytes)
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("--when-url %q: not a URL: %v", raw, err)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "":
		return "", fmt.Errorf("--when-url %q: no scheme: write https://%s", raw, s)
	default:
		return "", fmt.Errorf("--when-url %q: only http and https pages can be watched, not %s", raw, u.Scheme)
	}
	if u.Hostname() == "" {
		return "", fmt.Errorf("--when-url %q: no host in the URL", raw)
	}
	if u.User != nil {
		return "", fmt.Errorf("--when-url %s: the URL carries credentials, which would be stored and shown with the schedule: remove them", u.Redacted())
	}
	return s, nil
}

// checkCommand checks a --when line as execute_shell checks a command line.
func checkCommand(line string) error {
	switch {
	case strings.TrimSpace(line) == "":
		return errors.New("--when: the command line is empty: give a shell line whose exit status says whether to wake the model (0 wakes it, 1 is nothing to do)")
	case strings.IndexByte(line, 0) >= 0:
		return errors.New("--when: the command line contains a NUL byte")
	case len(line) > maxCommandBytes:
		return fmt.Errorf("--when: the command line is %d bytes: at most %d; put a longer check in a script in the workspace and run that", len(line), maxCommandBytes)
	}
	return nil
}

// String is the conditions in the flags' words, for schedule show and logs.
func (c Conditions) String() string { return api.WakeConditions(c).String() }
