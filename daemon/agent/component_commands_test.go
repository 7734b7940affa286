package agent

import "testing"

// A command list may name commands a component offers (web_search, execute_shell,
// open_file): the list resolves, and those are left to their components.
func TestBuiltinCommandsLeaveComponentCommandsToTheirComponents(t *testing.T) {
	set, err := builtinCommands([]string{"read_file", "web_search", "execute_shell", "open_file", "ask_user", "finish"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"read_file", "ask_user", "finish"} {
		if _, ok := set.Get(n); !ok {
			t.Errorf("built-in %s missing from the set", n)
		}
	}
	for _, n := range []string{"web_search", "execute_shell", "open_file"} {
		if _, ok := set.Get(n); ok {
			t.Errorf("%s in the built-in set: its component offers it", n)
		}
	}
	if _, err := builtinCommands([]string{"no_such_command", "ask_user", "finish"}); err == nil {
		t.Error("an unknown command resolved")
	}
}
