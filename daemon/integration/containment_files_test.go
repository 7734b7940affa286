package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/testutil"
)

// attackFiles: every file command through absolute and relative symlinks, symlinked
// folders, .., absolute paths, /proc, hard links to files outside (as a clone would
// leave them), and writes to the files git runs code from.
func attackFiles(r *attackRig) {
	r.class = "files"
	t, out := r.t, r.out
	files := filepath.Join(out, "files")
	mustMkdir(t, files, 0o700)
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(files, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("canary.txt", r.secrets["file"]+"\n")
	write(r.secrets["listing_marker"]+".txt", "x\n")
	write("hard.txt", r.secrets["hard_link"]+"\n")
	write("hardw.txt", "hard link target, must not change\n")
	for _, n := range []string{"del1", "del2", "del3", "del4", "del5"} {
		write(n+".txt", "delete me if you can\n")
	}
	// Workspace-root marker: listing the folder above the workspace shows other agents'.
	mustMkdir(t, r.wsRoot, 0o755)
	os.WriteFile(filepath.Join(r.wsRoot, r.secrets["listing_marker"]+"-root"), nil, 0o600)

	hardOK := true
	plant := func(ws string) []string {
		rel, err := filepath.Rel(ws, files)
		if err != nil {
			t.Fatal(err)
		}
		links := map[string]string{
			"abs": filepath.Join(files, "canary.txt"), "rel": filepath.Join(rel, "canary.txt"),
			"dirlink": files, "reldirlink": rel, "dangling": filepath.Join(files, "made-through-dangling.txt"),
			"procenv": "/proc/self/environ", "rootlink": "/", "gitlink": ".git",
		}
		for name, dst := range links {
			if err := os.Symlink(dst, filepath.Join(ws, name)); err != nil {
				t.Fatal(err)
			}
		}
		for _, h := range []string{"hard.txt", "hardw.txt"} {
			if err := os.Link(filepath.Join(files, h), filepath.Join(ws, h)); err != nil {
				hardOK = false
				t.Logf("no hard link across %s and %s: %v", files, ws, err)
			}
		}
		var watch []string
		for _, repo := range []string{ws, filepath.Join(ws, "repo")} {
			if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
				t.Fatalf("git init: %v\n%s", err, out)
			}
			watch = append(watch, filepath.Join(repo, ".git", "hooks"), filepath.Join(repo, ".git", "config"))
		}
		return watch
	}
	// A workspace is <workspace_root>/ID: .. paths to the canaries are known up front.
	up, err := filepath.Rel(r.wsRoot, files)
	if err != nil {
		t.Fatal(err)
	}
	rel := func(name string) string { return filepath.Join("..", up, name) }
	abs := func(name string) string { return filepath.Join(files, name) }
	viaRoot := func(name string) string { return "rootlink" + filepath.Join(files, name) }
	marker := func(o *outcome) string {
		if strings.Contains(o.result, r.secrets["listing_marker"]) {
			return "the result lists a folder outside the workspace"
		}
		return ""
	}
	rootListing := func(o *outcome) string {
		if strings.Contains(o.result, "proc") && strings.Contains(o.result, "usr") && strings.Contains(o.result, "etc") {
			return "the result lists /"
		}
		return marker(o)
	}
	type c struct {
		name, cmd, path string
		check           func(*outcome) string
	}
	cases := []c{
		{"read_file_abs_symlink", "read_file", "abs", nil},
		{"read_file_rel_symlink", "read_file", "rel", nil},
		{"read_file_symlinked_folder", "read_file", "dirlink/canary.txt", nil},
		{"read_file_rel_symlinked_folder", "read_file", "reldirlink/canary.txt", nil},
		{"read_file_dotdot", "read_file", rel("canary.txt"), nil},
		{"read_file_absolute", "read_file", abs("canary.txt"), nil},
		{"read_file_root_symlink", "read_file", viaRoot("canary.txt"), nil},
		{"read_file_proc_symlink", "read_file", "procenv", nil},
		{"read_file_proc_absolute", "read_file", "/proc/self/environ", nil},
		{"read_file_proc_init", "read_file", "/proc/1/environ", nil},
		{"read_file_etc_shadow", "read_file", "/etc/shadow", nil},
		{"read_file_hard_link", "read_file", "hard.txt", nil},
		{"read_file_dotdot_through_subdir", "read_file", "./repo/../abs", nil},
		{"write_file_abs_symlink", "write_file", "abs", nil},
		{"write_file_rel_symlink", "write_file", "rel", nil},
		{"write_file_symlinked_folder", "write_file", "dirlink/new.txt", nil},
		{"write_file_rel_symlinked_folder", "write_file", "reldirlink/new2.txt", nil},
		{"write_file_dangling_symlink", "write_file", "dangling", nil},
		{"write_file_dotdot", "write_file", rel("new3.txt"), nil},
		{"write_file_absolute", "write_file", abs("new4.txt"), nil},
		{"write_file_root_symlink", "write_file", viaRoot("new5.txt"), nil},
		{"write_file_hard_link", "write_file", "hardw.txt", nil},
		{"append_to_file_abs_symlink", "append_to_file", "abs", nil},
		{"append_to_file_symlinked_folder", "append_to_file", "dirlink/canary.txt", nil},
		{"append_to_file_dotdot", "append_to_file", rel("canary.txt"), nil},
		{"append_to_file_absolute", "append_to_file", abs("canary.txt"), nil},
		{"append_to_file_hard_link", "append_to_file", "hardw.txt", nil},
		{"append_to_file_dangling_symlink", "append_to_file", "dangling", nil},
		{"list_folder_symlinked_folder", "list_folder", "dirlink", marker},
		{"list_folder_rel_symlinked_folder", "list_folder", "reldirlink/", marker},
		{"list_folder_dotdot", "list_folder", rel(""), marker},
		{"list_folder_parent", "list_folder", "..", marker},
		{"list_folder_absolute", "list_folder", files, marker},
		{"list_folder_root", "list_folder", "/", rootListing},
		{"list_folder_root_symlink", "list_folder", "rootlink", rootListing},
		{"search_files_symlinked_folder", "search_files", "dirlink/*", marker},
		{"search_files_rel_symlinked_folder", "search_files", "reldirlink/**", marker},
		{"search_files_dotdot", "search_files", rel("*"), marker},
		{"search_files_absolute", "search_files", abs("*"), marker},
		{"search_files_everything_for_text", "search_files", "**", marker},
		{"delete_file_symlinked_folder", "delete_file", "dirlink/del1.txt", nil},
		{"delete_file_dotdot", "delete_file", rel("del2.txt"), nil},
		{"delete_file_absolute", "delete_file", abs("del3.txt"), nil},
		{"delete_file_root_symlink", "delete_file", viaRoot("del4.txt"), nil},
		{"delete_file_rel_symlinked_folder", "delete_file", "reldirlink/del5.txt", nil},
		{"git_write_hook", "write_file", ".git/hooks/pre-commit", nil},
		{"git_write_hook_cleaned_path", "write_file", "x/../.git/hooks/pre-push", nil},
		{"git_write_hook_through_symlink", "write_file", "gitlink/hooks/post-checkout", nil},
		{"git_write_config", "write_file", ".git/config", nil},
		{"git_append_config", "append_to_file", ".git/config", nil},
		{"git_write_nested_repo_hook", "write_file", "repo/.git/hooks/pre-commit", nil},
		{"git_write_nested_repo_config", "write_file", "repo/./.git/config", nil},
	}
	steps := make([]step, len(cases))
	for i, tc := range cases {
		args := map[string]any{"path": tc.path}
		switch tc.cmd {
		case "write_file":
			args["contents"] = "#!/bin/sh\ntouch /tmp/agentd-attack-pwned\n"
		case "append_to_file":
			args["text"] = "[core]\n\thooksPath = /tmp\nPWNED\n"
		case "search_files":
			args = map[string]any{"pattern": tc.path, "text": "CANARY"}
		}
		steps[i] = step{name: tc.name, command: tc.cmd, args: args, mode: approve, check: tc.check}
	}
	// Controls first and last: the file commands work, so what they refuse proves something.
	steps = append([]step{
		{command: "write_file", mode: approve, args: map[string]string{"path": "notes/ok.txt", "contents": "FILES-WORK"}, check: worked("")},
		{command: "read_file", mode: approve, args: map[string]string{"path": "notes/ok.txt"}, check: worked("FILES-WORK")},
	}, steps...)
	steps = append(steps, step{command: "list_folder", mode: approve, args: map[string]string{"path": "notes"}, check: worked("ok.txt")})
	r.drive(agentRun{name: "filer", steps: steps, plant: func(ws string) []string {
		watch := plant(ws)
		if !hardOK {
			for i := range steps {
				if strings.Contains(steps[i].name, "hard_link") {
					steps[i].name = "" // no hard link on this machine: not a case
				}
			}
		}
		return watch
	}})
	attackOpen(r, plant)
}

// attackOpen: open_file and open_folder put what they open into every later prompt, not
// into their result: each case is an agent of its own, and the prompt after the step is
// searched for the canaries.
func attackOpen(r *attackRig, plant func(ws string) []string) {
	for i, tc := range []struct{ name, cmd, path string }{
		{"open_file_abs_symlink", "open_file", "abs"},
		{"open_file_symlinked_folder", "open_file", "dirlink/canary.txt"},
		{"open_file_hard_link", "open_file", "hard.txt"},
		{"open_file_proc_environ", "open_file", "/proc/self/environ"},
		{"open_folder_symlinked_folder", "open_folder", "dirlink"},
	} {
		name := fmt.Sprintf("opener%d", i)
		r.drive(agentRun{name: name, plant: plant, steps: []step{
			{command: tc.cmd, mode: approve, args: map[string]string{"path": tc.path}},
		}})
		testutil.Eventually(r.t, 20*time.Second, name+"'s next prompt", func() bool { return r.router.requested(name) >= 2 })
		var why []string
		for _, req := range r.fake.Requests() {
			if agentOf(&req) != name {
				continue
			}
			for _, m := range req.Messages {
				for label, secret := range r.secrets {
					if label != "fake_ollama" && strings.Contains(m.Content, secret) && !slices.Contains(why, label) {
						why = append(why, label)
					}
				}
			}
		}
		escape := ""
		if len(why) > 0 {
			escape = "the prompt holds the " + strings.Join(why, ", ") + " canary"
		}
		r.record(tc.name, escape)
	}
}

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
