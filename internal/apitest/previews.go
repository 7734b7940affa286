package apitest

import (
	"encoding/json"
	"time"

	"github.com/agentd/agentd/api"
)

// PreviewProposals are pending proposals with the daemon's previews, one of each kind:
// write_file (a diff), execute_shell (programs, sandbox, network, and the output and
// change of its run ahead on a copy of the workspace) and clone_repository
// (the host as the network guard reads it), for the front ends' golden tests. Their
// strings carry what model output can: a bidi override, a zero-width space, an escape.
func PreviewProposals() []*api.Proposal {
	at := time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)
	return []*api.Proposal{{
		ID: "p-31", AgentID: "a-1", RunID: "r-2", Step: 3, Command: "write_file", Status: api.ProposalPending,
		Hash:     "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
		Args:     json.RawMessage(`{"contents":"# Notes\n\n1. Outlines (2023)\n2. XGrammar (2024)\n3. SynCode (2024)\n","path":"notes.md"}`),
		Thoughts: api.Thoughts{Speak: "Adding the third paper to the notes."},
		Preview: &api.Preview{Kind: api.PreviewDiff, Path: "notes.md", Diff: "--- a/notes.md\n+++ b/notes.md\n" +
			"@@ -1,4 +1,5 @@\n # Notes\n \n 1. Outlines (2023)\n-2. XGrammar (2024)\u202e\n+2. XGrammar (2024)\n+3. SynCode (2024)\n"},
		CreatedAt: at,
	}, {
		ID: "p-32", AgentID: "a-1", RunID: "r-2", Step: 4, Command: "execute_shell", Status: api.ProposalPending,
		Hash: "1f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
		Args: json.RawMessage(`{"command_line":"grep -c TODO notes.md | tee count.txt"}`),
		Preview: &api.Preview{Kind: api.PreviewProgram,
			Programs: [][]string{{"grep", "-c", "TODO", "notes.md"}, {"tee", "count\u200b.txt"}},
			Dir:      "/var/lib/agentd/work/a-1",
			Sandbox:  "bubblewrap (/usr/bin/bwrap), uid 65534, no capabilities, no network",
			Network:  "none (a namespace of its own)",
			Effect:   &api.Effect{Output: "3\nexit status 0", Summary: "changes 1 file (+1 −0)", From: 4, To: 6},
			Diff:     "created file count\u200b.txt (+1 −0)\n\n--- /dev/null\n+++ b/count\u200b.txt\n@@ -0,0 +1 @@\n+3\n"},
		CreatedAt: at.Add(time.Minute),
	}, {
		ID: "p-33", AgentID: "a-1", RunID: "r-2", Step: 5, Command: "clone_repository", Status: api.ProposalPending,
		Hash: "2f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
		Args: json.RawMessage(`{"path":"xgrammar","url":"https://github.com@2130706433/mlc-ai/xgrammar"}`),
		Preview: &api.Preview{Kind: api.PreviewHost,
			Host: `127.0.0.1:443 (written "2130706433"), a loopback address`,
			Note: "it will be refused: the url carries credentials; give the URL without a user name or password\x1b[2J"},
		CreatedAt: at.Add(2 * time.Minute),
	}}
}
