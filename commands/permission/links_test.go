package permission

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentd/agentd/commands"
)

// TestPathRulesSeeThroughLinks checks that a path rule decides on what a file command
// opens, not only on the path as written: a symlink the agent's shell (or a cloned repo)
// made inside the workspace must not carry read_file past `read_file(secrets/*)`, nor
// write_file past the folder its allow rule names.
func TestPathRulesSeeThroughLinks(t *testing.T) {
	links := map[string]string{ // the workspace's symlinks, resolved as commands.ResolveLinks would
		"pub/key": "secrets/key", "pub/dir": "secrets", "pub/dir/key": "secrets/key",
		"notes/rc": ".bashrc", "notes/git": ".git", "notes/git/config": ".git/config", "pub": "pub", ".": ".",
		"notes/a": "notes/a", "docs/readme": "notes/readme",
	}
	resolve := func(p string) (string, error) {
		if r, ok := links[p]; ok {
			return r, nil
		}
		if p == "out/link" {
			return "", errors.New("leads outside the workspace")
		}
		return p, nil
	}
	opts := Options{Resolve: resolve}
	tests := []struct {
		name string
		spec commands.Spec
		args string
		opts Options
		want Effect
	}{
		{"read_link_to_denied_file", readSpec, `{"path":"pub/key"}`, opts, Deny},
		{"read_through_linked_folder", readSpec, `{"path":"pub/dir/key"}`, opts, Deny},
		{"read_link_dotted", readSpec, `{"path":"./pub//key"}`, opts, Deny},
		{"open_file_link", openFileSpec, `{"path":"pub/key"}`, opts, Deny},
		{"list_linked_folder", listFolderSpec, `{"path":"pub/dir"}`, opts, Deny},
		{"search_linked_folder", searchSpec, `{"pattern":"pub/dir/**","text":"x"}`, opts, Deny},
		{"write_link_out_of_allowed_folder", writeSpec, `{"path":"notes/rc","content":"x"}`, opts, Ask},
		{"write_link_into_git", writeSpec, `{"path":"notes/git/config","content":"x"}`, opts, Deny},
		{"append_link_into_git", appendSpec, `{"path":"notes/git/config","text":"x"}`, opts, Deny},
		{"auto_read_link_to_denied", readSpec, `{"path":"pub/key"}`, Options{Resolve: resolve, AutoRead: true}, Deny},
		// Links inside what the rules allow anyway, and paths without links, decide as before.
		{"write_plain_allowed", writeSpec, `{"path":"notes/a","content":"x"}`, opts, Allow},
		{"read_link_to_allowed", readSpec, `{"path":"docs/readme"}`, opts, Allow},
		{"read_plain", readSpec, `{"path":"pub/other"}`, opts, Allow},
		{"link_leading_out_decided_as_written", readSpec, `{"path":"out/link"}`, opts, Allow},
		{"without_resolver_as_written", readSpec, `{"path":"pub/key"}`, Options{}, Allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Evaluate(tt.spec, json.RawMessage(tt.args), tt.opts, fileRules)
			if got.Effect != tt.want {
				t.Errorf("Evaluate = %+v; want %s", got, tt.want)
			}
		})
	}
}
