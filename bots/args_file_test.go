package bots

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
)

// TestProposalArgsAttachedWhenCut: arguments longer than the message shows are said to
// be attached and are uploaded whole after the proposal message, once, before its diff;
// arguments shown whole are not uploaded.
func TestProposalArgsAttachedWhenCut(t *testing.T) {
	hostile := strings.Repeat("&<>`", 2500) // 10,000 bytes
	long := longDiffProposal()
	long.Args, _ = json.Marshal(map[string]string{"path": "list.txt", "contents": hostile})
	short := &api.Proposal{ID: "p-1", AgentID: "a-1", Step: 1, Command: "read_file", Status: api.ProposalPending,
		Args: []byte(`{"path":"list.txt"}`)}
	ad := proposalsPosted(short, long, long) // the second long one is a resync

	if len(ad.posts) != 2 {
		t.Fatalf("posts = %q, want one message per proposal", ad.posts)
	}
	if len(ad.files) != 2 {
		t.Fatalf("uploads = %d, want the long arguments then the long diff, once each", len(ad.files))
	}
	name, comment, content := splitUpload(ad.files[0])
	if name != "step-3-write_file-args.json" || comment != "Full arguments of step 3 (write_file)" {
		t.Errorf("first upload is %q (%q), want the arguments", name, comment)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(content), &got); err != nil || got["contents"] != hostile {
		t.Errorf("the uploaded arguments are not whole (%v): %.80q…", err, content)
	}
	if name, _, _ := splitUpload(ad.files[1]); name != "step-3-write_file.diff" {
		t.Errorf("second upload is %q, want the diff", name)
	}

	for _, tc := range []struct {
		name string
		p    *api.Proposal
		note bool
	}{
		{"cut_arguments_say_attached", long, true},
		{"whole_arguments_say_nothing", short, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := FormatProposal(ProposalView{Proposal: tc.p}, "slack")
			noted := false
			for _, part := range m.Parts {
				for _, s := range part.Spans {
					noted = noted || strings.HasPrefix(s.Text, "Full arguments (") && strings.HasSuffix(s.Text, " bytes) attached.")
				}
			}
			if noted != tc.note {
				t.Errorf("the message says the arguments are attached: %v, want %v", noted, tc.note)
			}
		})
	}
}

// splitUpload splits a fakeAdapter upload into its name, comment and content.
func splitUpload(s string) (name, comment, content string) {
	name, rest, _ := strings.Cut(s, "\n")
	comment, content, _ = strings.Cut(rest, "\n")
	return name, comment, content
}
