package commands

// CleanPath returns p as the cleaned, workspace-relative path every file command resolves
// ("./notes//a.txt" and "notes/../notes/a.txt" are "notes/a.txt"), or the error the file
// commands give for a path that is empty, absolute or leaves the workspace. It is the one
// path cleaner: permission rules match what it returns, so they see what the command opens.
func CleanPath(p string) (string, error) { return cleanRel(p) }
