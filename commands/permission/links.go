package permission

import (
	"strings"

	"github.com/agentd/agentd/commands"
)

// linkedSubject returns the subject a file command's subject resolves to through the
// workspace's symlinks, when resolve (Options.Resolve) says it differs: the path that
// read_file, write_file, list_folder... actually open, or for search_files the glob with
// its literal start resolved (the walk below it follows no link). A path rule matched on
// the text alone would let `pub/link` reach what a rule on `secrets/*` denies.
func linkedSubject(k kind, subject string, resolve func(string) (string, error)) (string, bool) {
	if resolve == nil {
		return "", false
	}
	clean, err := commands.CleanPath(subject)
	if err != nil {
		return "", false
	}
	start, rest := clean, ""
	if k == kindSearch {
		segs := strings.Split(clean, "/")
		i := 0
		for i < len(segs) && !strings.ContainsAny(segs[i], `*?[\`) {
			i++
		}
		start, rest = strings.Join(segs[:i], "/"), strings.Join(segs[i:], "/")
		if start == "" {
			start = "."
		}
	} else if k != kindPath && k != kindFolder {
		return "", false
	}
	real, err := resolve(start)
	if err != nil || real == start {
		return "", false // a link that leads outside or nowhere: the command refuses it
	}
	if rest != "" {
		real = strings.TrimPrefix(real+"/"+rest, "./")
	}
	return real, true
}
