package permission

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd/agentd/commands"
)

// TestDeniedPathsMatchTheFileCommands: a path is kept from programs exactly when the deny
// rules refuse a file command that path (a folder: when they name it or everything in it),
// and the walk roots cover every such path.
func TestDeniedPathsMatchTheFileCommands(t *testing.T) {
	layer := rules("agent", nil, []string{"read_file(secrets/*)", "open_file(keys/id_*)", "read_file(*.pem)",
		"write_file(locked/*)", "delete_file(./archive/*)", "execute_shell(rm *)", "web.search(*)"})
	d := Denied(layer)
	if got, want := d.Roots(), []string{"."}; !reflect.DeepEqual(got, want) {
		t.Errorf("Roots() = %q; want %q (a rule starting with a wildcard needs the whole workspace)", got, want)
	}
	tests := []struct {
		rel         string
		read, write bool
	}{
		{"secrets", true, false}, // everything in it is denied: hidden whole
		{"secrets/key.txt", true, false},
		{"secrets/a/b", true, false},
		{"secretsx", false, false},
		{"keys", false, false}, // only some names in it
		{"keys/id_rsa", true, false},
		{"keys/known_hosts", false, false},
		{"src/server.pem", true, false},
		{"locked", false, true},
		{"locked/config", false, true},
		{"archive/old.txt", false, true},
		{"notes.txt", false, false},
	}
	for _, tt := range tests {
		r, w := d.Deny(tt.rel)
		if r != tt.read || w != tt.write {
			t.Errorf("Deny(%q) = read %v, write %v; want %v, %v", tt.rel, r, w, tt.read, tt.write)
		}
		// The same verdict a file command gets.
		args, _ := json.Marshal(map[string]string{"path": tt.rel})
		if v := Evaluate(readSpec, args, Options{}, layer); strings.Contains(tt.rel, "/") && (v.Effect == Deny) != r {
			t.Errorf("read_file(%s) is %s but Deny says read %v", tt.rel, v.Effect, r)
		}
	}
	narrow := Denied(rules("agent", nil, []string{"read_file(secrets/*)", "write_file(a/b/c)"}))
	if got, want := narrow.Roots(), []string{"a/b", "secrets"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Roots() = %q; want %q", got, want)
	}
	if got, want := narrow.WriteRoots(), []string{"a/b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("WriteRoots() = %q; want %q (only the rules denying writes)", got, want)
	}
	if Denied(rules("agent", []string{"read_file(*)"}, []string{"execute_shell(rm *)"})) != nil {
		t.Error("rules that deny no file command deny paths")
	}
}

// TestWriteSuffix: `+write` on an allow pattern for a sandboxed command says what it
// approves may write the workspace; anywhere else it is an error naming the fix.
func TestWriteSuffix(t *testing.T) {
	for _, s := range []string{"execute_shell(make fmt)+write", "execute_python_file(tools/*)+write"} {
		p, err := Parse(s)
		if err != nil || !p.Write() || p.String() != s {
			t.Errorf("Parse(%q) = %q, write %v, %v", s, p.String(), p.Write(), err)
		}
	}
	for s, want := range map[string]string{
		"execute_shell+write":            "follows the closing parenthesis",
		"read_file(notes/*)+write":       "only means something for execute_shell",
		"execute_*(make)+write":          "only means something for execute_shell",
		"execute_shell(make fmt) +write": "follows the closing parenthesis",
	} {
		if _, err := Parse(s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v; want an error saying %q", s, err, want)
		}
	}
	if _, err := ParseRules("config", nil, []string{"execute_shell(make)+write"}); err == nil || !strings.Contains(err.Error(), "only widens an allow rule") {
		t.Errorf("a deny with +write: %v", err)
	}
	layer := rules("agent", []string{"execute_shell(make fmt*)+write", "execute_shell(git status*)"}, nil)
	for line, write := range map[string]bool{"make fmt": true, "git status": false, "make fmt && git status": false} {
		args, _ := json.Marshal(map[string]string{"command_line": line})
		if v := Evaluate(shellSpec, args, Options{}, layer); v.Effect != Allow || v.Write != write {
			t.Errorf("%q: %s, write %v; want allow, write %v", line, v.Effect, v.Write, write)
		}
	}
}

// WriteRule names the rule that denies writing a path, for the message a put back
// gives, and nothing for a path no rule denies writing.
func TestWriteRuleNamesTheRuleDenyingAWrite(t *testing.T) {
	r, err := ParseRules("agent", nil, []string{"read_file(secret/*)", "write_file(config/*.toml)", "write_file(*.env)"})
	if err != nil {
		t.Fatal(err)
	}
	d := Denied(r)
	for rel, want := range map[string]string{
		"config/app.toml": "write_file(config/*.toml)",
		"a/b/.env":        "write_file(*.env)",
		"config/app.json": "",
		"secret/key":      "",
	} {
		if got := d.WriteRule(rel); got != want {
			t.Errorf("WriteRule(%q) = %q, want %q", rel, got, want)
		}
	}
}

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
