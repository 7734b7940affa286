package bots

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/apitest"
	"github.com/agentd/agentd/internal/testutil"
)

// longDiffProposal is a write_file proposal whose diff is longer than the lines shown inline.
func longDiffProposal() *api.Proposal {
	var diff strings.Builder
	diff.WriteString("--- /dev/null\n+++ b/list.txt\n@@ -0,0 +1,40 @@\n")
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&diff, "+item %d\n", i)
	}
	return &api.Proposal{ID: "p-40", AgentID: "a-1", Step: 3, Command: "write_file", Status: api.ProposalPending,
		Args:    []byte(`{"contents":"item 1\n…","path":"list.txt"}`),
		Preview: &api.Preview{Kind: api.PreviewDiff, Path: "list.txt", Diff: diff.String()}}
}

// TestFormatProposalPreviewGolden: the platform-neutral proposal message of each kind of
// preview (a diff, programs, a host, a diff too long to show whole), as JSON goldens.
func TestFormatProposalPreviewGolden(t *testing.T) {
	for _, p := range append(apitest.PreviewProposals(), longDiffProposal()) {
		name := p.Command
		if p.ID == "p-40" {
			name = "write_file_long"
		}
		t.Run(name, func(t *testing.T) {
			m := FormatProposal(ProposalView{Proposal: p, ApproveN: 3}, "slack")
			// The parts only: the buttons are the decision binding's, tested with it.
			testutil.GoldenJSON(t, "testdata/proposal_"+name+".json", struct {
				Summary string
				Parts   []Part
			}{m.Summary, m.Parts})
			for _, part := range m.Parts {
				for _, s := range append(part.Spans, Span{Text: part.Code}) {
					if strings.ContainsAny(s.Text, "\u202e\u200b\x1b") {
						t.Errorf("unescaped control, bidi or zero-width character in %q", s.Text)
					}
				}
			}
		})
	}
}

// TestProposalDiffAttachedWhenCut: a diff longer than the inline lines is uploaded whole
// after the proposal message, once, even when the proposal is seen again; a short one is not.
func TestProposalDiffAttachedWhenCut(t *testing.T) {
	long := longDiffProposal()
	ad := proposalsPosted(apitest.PreviewProposals()[0], long, long) // the second long one is a resync

	if len(ad.posts) != 2 {
		t.Fatalf("posts = %q, want one message per proposal", ad.posts)
	}
	if len(ad.files) != 1 {
		t.Fatalf("uploads = %d, want the long diff once:\n%q", len(ad.files), ad.files)
	}
	_, full := long.Preview.Render()
	want := "step-3-write_file.diff\nFull diff of step 3 (write_file)\n" + full + "\n"
	if ad.files[0] != want {
		t.Errorf("upload =\n%s\nwant\n%s", ad.files[0], want)
	}
	if !strings.HasSuffix(full, "+item 40") {
		t.Errorf("the uploaded diff is not whole: ends %q", full[len(full)-20:])
	}
}

// TestProposalAskedAgainShowsItsNewPreview: a proposal asked again once its preview went
// stale (and was run again) is shown as it is asked now: its message is updated with
// the new preview, not posted twice, and not left with the stale one; a new diff too
// long for the message is attached whole, as a first post's is.
func TestProposalAskedAgainShowsItsNewPreview(t *testing.T) {
	ctx := context.Background()
	r, ad := threadRelay(ctx, &helperService{})
	p := apitest.PreviewProposals()[0]
	r.posts.handle(ctx, api.Event{Type: api.EventProposal, AgentID: "a-1", Proposal: p})
	r.out.flush()
	before := len(ad.files)
	again := *p
	fresh := *p.Preview
	var diff strings.Builder
	diff.WriteString("--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1,61 @@\n a person wrote this\n+added\n")
	for i := 1; i <= 60; i++ {
		fmt.Fprintf(&diff, "+rerun line %d\n", i)
	}
	fresh.Diff = diff.String()
	again.Preview, again.Status = &fresh, api.ProposalInterrupted
	r.posts.handle(ctx, api.Event{Type: api.EventProposal, AgentID: "a-1", Proposal: &again})
	r.out.flush()
	if len(ad.posts) != 1 || len(ad.updates) != 1 || !strings.Contains(ad.updates[0], "+added") {
		t.Fatalf("posts %q, updates %q: want the one message updated with the new preview", ad.posts, ad.updates)
	}
	if files := ad.files[before:]; len(files) != 1 || !strings.Contains(files[0], "+rerun line 60") {
		t.Fatalf("uploads after the proposal was asked again: %q; want its new diff whole", files)
	}
}

// TestProposalAskedAgainMarksItsEarlierDiffOutOfDate: a proposal whose long diff was
// attached is asked again with another preview: its message says what was attached
// before is out of date, and the new diff, when cut, goes up again; with no diff now,
// nothing goes up and the message still says so.
func TestProposalAskedAgainMarksItsEarlierDiffOutOfDate(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		diff    string
		uploads int
	}{
		{"new_long_diff", strings.Repeat("+again\n", 40), 2},
		{"no_diff_now", "", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, ad := threadRelay(ctx, &helperService{})
			p := longDiffProposal()
			r.posts.handle(ctx, api.Event{Type: api.EventProposal, AgentID: "a-1", Proposal: p})
			r.out.flush()
			again, fresh := *p, *p.Preview
			fresh.Diff = c.diff
			again.Preview, again.Status = &fresh, api.ProposalInterrupted
			r.posts.handle(ctx, api.Event{Type: api.EventProposal, AgentID: "a-1", Proposal: &again})
			r.out.flush()
			if len(ad.updates) != 1 || !strings.Contains(ad.updates[0], "attached before is out of date") {
				t.Fatalf("updates %q: want the message marking what was attached before out of date", ad.updates)
			}
			if len(ad.files) != c.uploads || (c.uploads == 2 && !strings.Contains(ad.files[1], "+again")) {
				t.Errorf("uploads %q: want %d, the new diff last", ad.files, c.uploads)
			}
		})
	}
}

// proposalsPosted hands each of ps to a thread's relay as agent a-1's proposal event
// and returns the adapter once the relay's outbox has posted them.
func proposalsPosted(ps ...*api.Proposal) *fakeAdapter {
	ctx := context.Background()
	r, ad := threadRelay(ctx, &helperService{})
	for _, p := range ps {
		r.posts.handle(ctx, api.Event{Type: api.EventProposal, AgentID: "a-1", Proposal: p})
	}
	r.out.flush()
	return ad
}
