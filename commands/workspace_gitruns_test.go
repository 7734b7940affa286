package commands

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
)

// writeIn runs write_file of p in workspace ws through Run, as an agent's step does.
func writeIn(ws, p string, timeout time.Duration) (string, error) {
	args, _ := json.Marshal(map[string]string{"path": p, "contents": "x\n"})
	return Run(context.Background(), writeFile{}, Env{Workspace: ws}, args, Limits{Timeout: timeout})
}

// TestWritesWaitForABoundedGitInTheirTree: while a bounded git runs in a helper's
// folder, a write there by the helper or its parent (by the path, or through a link)
// waits, and is refused, naming why, when its time runs out first, and so does a parent's
// write into any helper's folder, where a helper's links may move meanwhile; one of the
// parent's own files, of a sibling, or the helper's under its parent's git (which takes
// no repository of agents/), does not wait. A waiting write is made once the git run ends.
func TestWritesWaitForABoundedGitInTheirTree(t *testing.T) {
	ws := testutil.ResolvedTempDir(t)
	helper, sibling := filepath.Join(ws, HelpersFolder, "h"), filepath.Join(ws, HelpersFolder, "s")
	for _, d := range []string{helper, sibling} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(HelpersFolder, "h"), filepath.Join(ws, "tohelper")); err != nil {
		t.Fatal(err)
	}
	// the parent's own link through a helper's link that leads back out of agents/: the
	// helper may point it at a sibling between the look and the write
	if err := errors.Join(os.Mkdir(filepath.Join(ws, "own"), 0o755), os.Symlink("../../own", filepath.Join(helper, "out")),
		os.Symlink(filepath.Join(HelpersFolder, "h", "out"), filepath.Join(ws, "results"))); err != nil {
		t.Fatal(err)
	}
	end, err := GitRun(context.Background(), helper)
	if err != nil {
		t.Fatal(err)
	}
	defer end()
	for name, w := range map[string]struct{ ws, path string }{
		"parent_into_helper":              {ws, "agents/h/parent.txt"},
		"parent_through_a_link_to_helper": {ws, "tohelper/linked.txt"},
		// s may turn a folder of its own into a link to h between the look and the write
		"parent_into_another_helper":                {ws, "agents/s/other.txt"},
		"parent_through_a_helpers_link_leading_out": {ws, "results/planted.txt"},
		"helper_itself":                             {helper, "own.txt"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := writeIn(w.ws, w.path, 100*time.Millisecond)
			if err == nil || !strings.Contains(err.Error(), "git is running in this workspace") {
				t.Errorf("write during the git run: %v; want it refused for the git run", err)
			}
			if _, serr := os.Stat(filepath.Join(w.ws, w.path)); serr == nil {
				t.Errorf("%s was written while git ran", w.path)
			}
		})
	}
	t.Run("parents_own_file", func(t *testing.T) {
		if _, err := writeIn(ws, "notes.txt", time.Minute); err != nil {
			t.Errorf("the parent's write of its own file waited for its helper's git: %v", err)
		}
	})
	t.Run("sibling_and_helper_under_parents_git", func(t *testing.T) {
		if _, err := writeIn(sibling, "free.txt", time.Minute); err != nil {
			t.Errorf("a sibling's write waited for another helper's git: %v", err)
		}
		endParent, err := GitRun(context.Background(), ws)
		if err != nil {
			t.Fatal(err)
		}
		defer endParent()
		if _, err := writeIn(sibling, "free2.txt", time.Minute); err != nil {
			t.Errorf("a helper's write waited for its parent's git: %v", err)
		}
	})
	t.Run("made_once_git_ends", func(t *testing.T) {
		done := make(chan error, 1)
		go func() {
			_, err := writeIn(ws, "agents/h/later.txt", time.Minute)
			done <- err
		}()
		later := filepath.Join(helper, "later.txt")
		if !testutil.Hold(200*time.Millisecond, func() bool { _, err := os.Stat(later); return err != nil }) {
			t.Fatal("the write was made while git ran")
		}
		end()
		if err := <-done; err != nil {
			t.Fatalf("the waiting write: %v", err)
		}
		if _, err := os.Stat(later); err != nil {
			t.Errorf("the waiting write made nothing: %v", err)
		}
	})
}

// TestAWaitingWriteGoesInWhileGitRunsTakeTurns: git runs in a helper's folder that
// overlap one another (a new one starting before the last ends) do not keep a write there
// out: once it waits, a new git run there waits for it, and it goes in as soon as the
// runs under way end.
func TestAWaitingWriteGoesInWhileGitRunsTakeTurns(t *testing.T) {
	ws := testutil.ResolvedTempDir(t)
	helper := filepath.Join(ws, HelpersFolder, "h")
	if err := os.MkdirAll(helper, 0o755); err != nil {
		t.Fatal(err)
	}
	last, err := GitRun(context.Background(), helper)
	if err != nil {
		t.Fatal(err)
	}
	stop, relayDone := make(chan struct{}), make(chan struct{})
	go func() { // each run ends only once the next has started, or given up waiting
		defer close(relayDone)
		for {
			select {
			case <-stop:
				last()
				return
			case <-time.After(20 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			next, err := GitRun(ctx, helper)
			cancel()
			last()
			if last = func() {}; err == nil {
				last = next
			}
		}
	}()
	_, err = writeIn(ws, "agents/h/notes.txt", 10*time.Second)
	close(stop)
	<-relayDone
	if err != nil {
		t.Fatalf("git runs taking turns kept the write out: %v", err)
	}
}

// TestGitRunWaitsForAWriteUnderWay: a git run starts only once a write in its tree ends,
// so what it finds of its repositories before it starts stays true.
func TestGitRunWaitsForAWriteUnderWay(t *testing.T) {
	ws := testutil.ResolvedTempDir(t)
	end, err := WriteHold(context.Background(), ws, true)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if endGit, err := GitRun(ctx, filepath.Join(ws, HelpersFolder, "h")); err == nil {
		endGit()
		t.Fatal("a git run started in a tree a write was under way in")
	}
	end()
	endGit, err := GitRun(context.Background(), ws)
	if err != nil {
		t.Fatalf("git run after the write: %v", err)
	}
	endGit()
}
