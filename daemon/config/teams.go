package config

import "path/filepath"

// TeamsConfig is the [teams] section.
type TeamsConfig struct {
	// Dir holds the workflow files chat's `/agent team NAME TASK` may start, found by bare
	// name (NAME.toml) or absolute path; chat reads no file outside it (no link or hard
	// link out either). "" means none: chat starts no team run.
	Dir string `toml:"dir"`
}

func (t *TeamsConfig) problems(bad func(key, format string, args ...any)) {
	if t.Dir != "" && !filepath.IsAbs(t.Dir) {
		bad("teams.dir", "%q is not an absolute path", t.Dir)
	}
}
