package config

import "fmt"

// Warnings returns settings that are valid but do nothing as written, without lines
// (Load adds them). agentd --check-config prints them and the daemon logs them at
// start; neither refuses the config for them.
func (c *Config) Warnings() []Problem {
	var warns []Problem
	warn := func(key, format string, args ...any) {
		warns = append(warns, Problem{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	c.HTTP.warnings(warn)
	c.checkpointWarnings(warn)
	return warns
}
