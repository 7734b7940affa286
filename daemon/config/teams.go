package config

import "path/filepath"

// TeamsConfig is the [teams] section.
type TeamsConfig struct {
	// Dir holds workflow files that chat's `/agent team NAME TASK` finds by bare name
	// (NAME.toml). "" means none: chat must give a workflow file's absolute path.
	Dir string `toml:"dir"`
}

func (t *TeamsConfig) problems(bad func(key, format string, args ...any)) {
	if t.Dir != "" && !filepath.IsAbs(t.Dir) {
		bad("teams.dir", "%q is not an absolute path", t.Dir)
	}
}
