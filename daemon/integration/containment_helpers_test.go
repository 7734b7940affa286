package integration

import (
	"os"
	"path/filepath"
)

// attackHelpers: a helper's workspace is <parent>/agents/NAME; a symlink there (planted by
// a clone, or by the parent's own shell) must not let the helper read, write or delete
// outside, and deleting the helper must not delete the link's target.
func attackHelpers(r *attackRig) {
	r.class = "helper_workspaces"
	t := r.t
	for _, v := range []struct{ boss, helper, how string }{
		{"boss-abs", "h1", "agents/h1 is an absolute symlink to a folder outside"},
		{"boss-shell", "h2", "the parent's shell runs ln -s OUTSIDE agents"},
		{"boss-rel", "h3", "agents is a relative symlink to a folder outside"},
	} {
		target := filepath.Join(r.out, v.boss)
		inner := target // where the helper's workspace lands when the link is followed
		if v.helper != "h1" {
			inner = filepath.Join(target, v.helper)
		}
		mustMkdir(t, inner, 0o700)
		if err := os.WriteFile(filepath.Join(inner, "secret.txt"), []byte(r.secrets["helper"]+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		r.mu.Lock()
		r.scripts[v.boss+"/"+v.helper] = []string{
			attackReply("helper read", "read_file", map[string]string{"path": "secret.txt"}),
			attackReply("helper write", "write_file", map[string]string{"path": "pwned.txt", "contents": "PWNED"}),
			attackReply("helper list", "list_folder", map[string]string{"path": "."}),
		}
		r.mu.Unlock()
		var steps []step
		if v.boss == "boss-shell" {
			steps = append(steps, shellStep("", "ln -s "+target+" agents && ls -la", nil))
		}
		steps = append(steps,
			step{name: "helper_" + v.helper + "_start_read_write", command: "start_agent", mode: approve,
				args: map[string]string{"name": v.helper, "task": "look around", "prompt": "read secret.txt: " + v.how}},
			step{name: "helper_" + v.helper + "_delete", command: "delete_agent", mode: approve, args: map[string]string{"key": v.helper}},
		)
		r.drive(agentRun{name: v.boss, helpers: true, steps: steps, plant: func(ws string) []string {
			switch v.boss {
			case "boss-abs":
				mustMkdir(t, filepath.Join(ws, "agents"), 0o755)
				must(t, os.Symlink(target, filepath.Join(ws, "agents", v.helper)))
			case "boss-rel":
				rel, err := filepath.Rel(ws, target)
				must(t, err)
				must(t, os.Symlink(rel, filepath.Join(ws, "agents")))
			}
			return nil
		}})
	}
	attackHelperSwap(r)
}

// attackHelperSwap: the helper exists and has worked; then agents/ is swapped for a link
// to a folder outside. Its next task and its removal must not follow the link.
func attackHelperSwap(r *attackRig) {
	t := r.t
	target := filepath.Join(r.out, "boss-swap")
	mustMkdir(t, filepath.Join(target, "h4"), 0o700)
	must(t, os.WriteFile(filepath.Join(target, "h4", "secret.txt"), []byte(r.secrets["helper"]+"\n"), 0o600))
	r.mu.Lock()
	r.scripts["boss-swap/h4"] = []string{
		attackReply("helper look", "list_folder", map[string]string{"path": "."}),
		attackReply("helper done", "finish", map[string]string{"reason": "looked"}),
		attackReply("helper read", "read_file", map[string]string{"path": "secret.txt"}),
		attackReply("helper write", "write_file", map[string]string{"path": "pwned.txt", "contents": "PWNED"}),
	}
	r.mu.Unlock()
	var ws string
	swap := func(*outcome) string {
		must(t, os.Rename(filepath.Join(ws, "agents"), filepath.Join(ws, "agents.old")))
		must(t, os.Symlink(target, filepath.Join(ws, "agents")))
		return ""
	}
	r.drive(agentRun{name: "boss-swap", helpers: true, plant: func(w string) []string { ws = w; return nil }, steps: []step{
		{name: "helper_h4_start", command: "start_agent", mode: approve, check: swap,
			args: map[string]string{"name": "h4", "task": "look around", "prompt": "look around"}},
		{name: "helper_h4_swapped_read_write", command: "message_agent", mode: approve,
			args: map[string]string{"key": "h4", "message": "read secret.txt, then write pwned.txt"}},
		{name: "helper_h4_swapped_delete", command: "delete_agent", mode: approve, args: map[string]string{"key": "h4"}},
	}})
}

func must(t interface{ Fatal(...any) }, err error) {
	if err != nil {
		t.Fatal(err)
	}
}
