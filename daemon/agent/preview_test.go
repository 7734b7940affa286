package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/api"
)

// TestProposalCarriesItsPreview: the diff is worked out against the workspace as it is
// when the model proposes, stored with the proposal, and the same after a restart even
// though the file changed since.
func TestProposalCarriesItsPreview(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(reply("write_file", map[string]string{"path": "notes.txt", "contents": "one\nTWO\n"}))
	a := h.create(api.CreateAgentRequest{})
	p := h.pending(a.ID)
	want := "--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1,2 @@\n+one\n+TWO\n"
	if p.Preview == nil || p.Preview.Kind != api.PreviewDiff || p.Preview.Diff != want {
		t.Fatalf("preview = %+v, want the diff\n%s", p.Preview, want)
	}
	if err := os.WriteFile(filepath.Join(a.Workspace, "notes.txt"), []byte("changed since\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.stop()
	h.start()
	got, err := h.sup.agentViews.Agent(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Pending == nil || got.Pending.Preview == nil || got.Pending.Preview.Diff != want {
		t.Fatalf("after a restart the preview is %+v, want the one shown when proposed", got.Pending)
	}
}

// TestCommandWithoutPreviewHasNone: a command that says nothing more than its args gets
// no preview.
func TestCommandWithoutPreviewHasNone(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(reply("finish", map[string]string{"reason": "done"}))
	a := h.create(api.CreateAgentRequest{})
	if p := h.pending(a.ID); p.Preview != nil {
		t.Fatalf("finish has a preview: %+v", p.Preview)
	}
}
