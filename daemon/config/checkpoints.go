package config

// CheckpointsConfig is the [checkpoints] section: the workspace checkpoint taken before
// every step that may change it, which `agentctl diff` shows and `agentctl rewind` puts
// back. Each agent's are kept in <state>/checkpoints/<agent id>/, out of every
// workspace and out of the sandbox's sight.
type CheckpointsConfig struct {
	// Enabled takes the checkpoints; off, nothing is kept and nothing can be rewound.
	Enabled bool `toml:"enabled"`
	// Keep is how many checkpoints each agent keeps at most, the oldest dropped first.
	Keep int `toml:"keep"`
	// MaxBytes bounds the disk each agent's checkpoints take (the newest is always kept).
	MaxBytes Size `toml:"max_bytes"`
	// KeepSteps is how many of an agent's latest steps (rewinds included) stay in rewind
	// range whatever keep and max_bytes say: their checkpoints are kept even past those
	// (never past twice max_bytes: new content is then not captured, and the step says
	// so), so that many cheap steps cannot push a bad one out of reach.
	KeepSteps int `toml:"keep_steps"`
	// MaxFileBytes is the largest file a checkpoint captures; a larger one is named in
	// the step's result as not captured (a rewind leaves it as it finds it).
	MaxFileBytes Size `toml:"max_file_bytes"`
	// MaxEntries bounds the files and folders one checkpoint captures: past it the rest
	// of the workspace is not captured, and the step's result says what was left out.
	MaxEntries int `toml:"max_entries"`
	// MinFreeBytes is the free disk kept on the state directory's file system: new
	// content that would leave less is not captured, and the step says so, so
	// checkpoints never fill the disk the store and the logs need.
	MinFreeBytes Size `toml:"min_free_bytes"`
}

func defaultCheckpoints() CheckpointsConfig {
	return CheckpointsConfig{Enabled: true, Keep: 100, KeepSteps: 10, MaxBytes: 1 << 30, MaxFileBytes: 64 << 20, MaxEntries: 1_000_000, MinFreeBytes: 512 << 20}
}

func (c CheckpointsConfig) problems(bad func(key, format string, args ...any)) {
	if c.Keep < 2 {
		bad("checkpoints.keep", "must be at least 2 checkpoints (a step's before and after), got %d", c.Keep)
	}
	if c.KeepSteps < 1 || c.KeepSteps > 1000 {
		bad("checkpoints.keep_steps", "must be from 1 to 1000 steps kept in rewind range, got %d", c.KeepSteps)
	}
	if c.MaxBytes < 1<<20 {
		bad("checkpoints.max_bytes", "must be at least 1MiB, got %d bytes", int64(c.MaxBytes))
	}
	if c.MaxFileBytes < 1 || c.MaxFileBytes > c.MaxBytes {
		bad("checkpoints.max_file_bytes", "must be more than 0 and at most checkpoints.max_bytes, got %d bytes", int64(c.MaxFileBytes))
	}
	if c.MaxEntries < 1000 {
		bad("checkpoints.max_entries", "must be at least 1000 files and folders captured per checkpoint, got %d", c.MaxEntries)
	}
	if c.MinFreeBytes < 1<<20 {
		bad("checkpoints.min_free_bytes", "must be at least 1MiB of free disk kept on the state directory's file system (the default is 512MiB), got %d bytes", int64(c.MinFreeBytes))
	}
}

// NoSecondWall is what deny rules lose with checkpoints off: each step's change is held
// to the write-deny rules by putting back, from the step's checkpoint, what the sandbox's
// read-only binds missed. The config's warning and an agent's policy view say it.
const NoSecondWall = "the deny rules have no second wall: a write the sandbox's read-only binds miss " +
	"(a file new under a rule such as write_file(*.toml), or in a folder made during the step) is not put back"

// checkpointWarnings says deny rules lose their second wall with checkpoints off.
func (c *Config) checkpointWarnings(warn func(key, format string, args ...any)) {
	deny := len(c.Permissions.Deny) > 0
	for _, o := range c.Agents {
		deny = deny || len(o.Deny) > 0
	}
	if !c.Checkpoints.Enabled && deny {
		warn("checkpoints.enabled", "is false, so %s; set enabled = true", NoSecondWall)
	}
}
