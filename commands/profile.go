package commands

// Profile is how far the programs an execute command starts may reach, set by who
// approved the command. The zero Profile is a person's approval of this exact command:
// the sandbox as configured.
type Profile struct {
	// Bounded is set when the command runs unasked, by an allow pattern or a pattern
	// grant rather than a person's decision on it: the workspace is read-only (unless
	// Write), there is no network whatever the config grants, and programs find no
	// configuration of the agent's that runs code (git's repository settings, python's
	// current folder). A program that loads code from a file the agent wrote can then
	// change nothing but its own output.
	Bounded bool
	// Write keeps the workspace writable in a bounded run: the pattern said +write.
	Write bool
	// Network keeps, in a bounded run, the network the config grants the agent: a
	// schedule's check command, which the person who made the schedule wrote. Patterns
	// never set it.
	Network bool
	// Offline takes the network away whatever the config grants, and nothing else: an
	// effect preview runs the command so, on a copy of the workspace.
	Offline bool
	// Paths are the workspace paths the permission rules deny to the file commands; the
	// sandbox keeps them from programs too. Nil denies nothing.
	Paths PathRules
}

// PathRules say which workspace paths the permission rules keep from every program
// (commands/permission.DeniedPaths).
type PathRules interface {
	// Roots are the cleaned workspace folders under which every denied path lies.
	Roots() []string
	// WriteRoots are the folders holding what each rule denying writes could match,
	// whatever is created or renamed there later (".": the whole workspace).
	WriteRoots() []string
	// Deny says what is kept from programs at rel, a cleaned workspace path: reading
	// it, and writing it. For a folder each means the folder and everything in it.
	Deny(rel string) (read, write bool)
	// WriteRule names the first rule that denies writing rel ("" when none does), for
	// the message about a change there that was refused or put back.
	WriteRule(rel string) string
	// String names the rules, for messages.
	String() string
}
