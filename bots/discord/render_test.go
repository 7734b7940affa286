package discord

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/chattest"
	"github.com/agentd/agentd/internal/testutil"
)

// wire is what discordgo sends for a message: the JSON payload, plus the files.
func wire(t *testing.T, payload any, files []*discordgo.File) []byte {
	t.Helper()
	type file struct {
		Name        string `json:"name"`
		ContentType string `json:"content_type"`
		Size        int    `json:"size"`
		Start       string `json:"start"`
	}
	out := struct {
		Payload any    `json:"payload"`
		Files   []file `json:"files,omitempty"`
	}{Payload: payload}
	for _, f := range files {
		b, _ := io.ReadAll(f.Reader)
		out.Files = append(out.Files, file{f.Name, f.ContentType, len(b), Truncate(string(b), 60)})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// hostile is a proposal whose text would reorder (U+202E, U+2066), hide (U+200B) or
// drive the terminal (ESC, BEL) if shown raw.
func hostile() *api.Proposal {
	p := proposal("p-0000000066aa", "run_shell\u202e", "{\"command\":\"rm -rf /\u202etxt.exe\",\"note\":\"\\u001b[2J\u200b\"}",
		"harmless\u202e\x1b]0;t\x07 \u2066x\u2069")
	return p
}

func proposal(id, command, args, speak string) *api.Proposal {
	return &api.Proposal{ID: id, Step: 3, Status: api.ProposalPending, Command: command, Args: json.RawMessage(args), Thoughts: api.Thoughts{Speak: speak}}
}

func TestRenderProposalGolden(t *testing.T) {
	long := `{"path": "big.txt", "text": "` + strings.Repeat("lorem ipsum ", 300) + `"}`
	cases := []struct {
		name  string
		agent string
		p     *api.Proposal
		n     int // ApproveN
	}{
		{"simple", "walker", proposal("p-0123456789ab", "read_file", `{"path": "notes.md"}`, "Reading the notes first."), 3},
		{"no_approve_n", "walker", proposal("p-0123456789ab", "list_folder", `{}`, ""), 0},
		{"injection", "evil_*bot* [x](https://e.vil)", proposal("p-00000000beef", "execute_shell",
			`{"command": "echo `+"```"+` @here <@&987654321098765432> `+"`rm -rf /`"+`"}`,
			"@everyone look <@123456789012345678> ```\n# not a header"), 5},
		{"hostile", "walker\u202e", hostile(), 3},
		{"long_args", "writer", proposal("p-0000000000aa", "write_file", long, "Writing it all."), 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The relay's path: its neutral message, rendered by the adapter.
			m := FromMessage(bots.FormatProposal(bots.ProposalView{Proposal: c.p, ApproveN: c.n}, Platform))
			checkContent(t, m.Content)
			testutil.Golden(t, "testdata/proposal_"+c.name+".json", wire(t, m.Send(), m.Files))
		})
	}
}

// checkContent holds for everything rendered: within the limit, code fences balanced, and
// nothing that pings or renders as a mention.
func checkContent(t testing.TB, s string) {
	t.Helper()
	if Len(s) > MaxContent {
		t.Errorf("content is %d characters", Len(s))
	}
	if n := strings.Count(s, "```"); n%2 != 0 {
		t.Errorf("%d code fences: a backtick run escaped the block\n%s", n, s)
	}
	for _, bad := range []string{"@everyone", "@here", "<@", "<#", "\u202e", "\u2066", "\x1b", "\x07"} {
		if strings.Contains(s, bad) {
			t.Errorf("content contains %q:\n%s", bad, s)
		}
	}
}

// TestRenderCheckpointGolden fixes a rewind's question, its end and a result with its
// change (chattest.CheckpointMessages) as Discord gets them: nothing pings, the diff is
// code, the buttons are there only while it asks.
func TestRenderCheckpointGolden(t *testing.T) {
	for name, msg := range chattest.CheckpointMessages(Platform, "200000000000000001") {
		t.Run(name, func(t *testing.T) {
			m := FromMessage(msg)
			checkContent(t, strings.ReplaceAll(m.Content, "<@200000000000000001>", "")) // the one mention, which allowed_mentions keeps from pinging
			if asks := len(m.Components) > 0; asks != (name == "rewind_asked") {
				t.Errorf("buttons shown: %v", asks)
			}
			testutil.Golden(t, "testdata/"+name+".json", wire(t, m.Send(), m.Files))
		})
	}
}

func TestRenderDecidedGolden(t *testing.T) {
	p := proposal("p-0123456789ab", "execute_shell", `{"command": "make test"}`, "Running the tests.")
	cases := []struct {
		name string
		d    api.Decision
	}{
		{"approve_n_by_discord_user", api.Decision{Kind: api.DecisionApprove, Count: 3, By: "200000000000000001"}},
		{"deny_by_local_user", api.Decision{Kind: api.DecisionDeny, By: "alice_*"}},
		{"feedback", api.Decision{Kind: api.DecisionFeedback, By: "200000000000000001", Feedback: "use `go test ./...` instead\n@everyone"}},
		{"policy", api.Decision{Kind: api.DecisionApprove, Count: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := FromMessage(bots.FormatProposal(bots.ProposalView{Proposal: p, Decision: &c.d}, Platform))
			if len(m.Components) != 0 {
				t.Error("a decided proposal keeps buttons")
			}
			testutil.Golden(t, "testdata/decided_"+c.name+".json", wire(t, m.Update(), nil))
		})
	}
}

func TestFeedbackModalGolden(t *testing.T) {
	testutil.Golden(t, "testdata/feedback_modal.json", wire(t, FeedbackModal(proposal("p-0123456789ab", "execute_shell", `{}`, "")), nil))
}

func TestCommandsGolden(t *testing.T) {
	testutil.Golden(t, "testdata/commands.json", wire(t, Commands(), nil))
}

func TestEscape(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"markdown", "*bold* _it_ ~s~ `c` |sp| > q # h - l [a](b)", `\*bold\* \_it\_ \~s\~ \` + "`c\\`" + ` \|sp\| \> q \# h \- l \[a\]\(b\)`},
		{"everyone", "@everyone and @here", "@\u200beveryone and @\u200bhere"},
		{"user_mention", "<@123> <@!123>", "<\u200b@123\\> <\u200b@!123\\>"},
		{"role_channel_command", "<@&1> <#2> </x:3>", "<\u200b@&1\\> <\u200b\\#2\\> <\u200b/x:3\\>"},
		{"backslash", `a\*b`, `a\\\*b`},
		{"plain", "hello world", "hello world"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Escape(c.in); got != c.want {
				t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestCodeBlockCannotBeClosed(t *testing.T) {
	for _, in := range []string{"```", "````", "a``b", "x`", "``` @here ```"} {
		out := "```\n" + codeBlock(in) + "\n```"
		if strings.Count(out, "```") != 2 || strings.Contains(out, "@here") {
			t.Errorf("codeBlock(%q) = %q", in, out)
		}
	}
}

func TestFit(t *testing.T) {
	cases := []struct {
		name      string
		text      string
		wantFiles int
	}{
		{"short", "done", 0},
		{"exactly_limit", strings.Repeat("a", MaxContent), 0},
		{"one_over", strings.Repeat("a", MaxContent+1), 1},
		{"astral_counts_double", strings.Repeat("😀", MaxContent/2+1), 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := Fit(c.text, "output.txt")
			if len(m.Files) != c.wantFiles || Len(m.Content) > MaxContent {
				t.Fatalf("files = %d, content length = %d", len(m.Files), Len(m.Content))
			}
			if c.wantFiles == 1 {
				b, _ := io.ReadAll(m.Files[0].Reader)
				if string(b) != c.text || !strings.Contains(m.Content, "attached as output.txt") {
					t.Fatalf("attachment/note wrong: %q", m.Content[len(m.Content)-60:])
				}
			}
		})
	}
}

func TestFitCode(t *testing.T) {
	header := "**result** of `execute_shell` (exit 0)"
	for _, n := range []int{10, 1900, 1990, 5000, 100000} {
		body := strings.Repeat("`", n%7) + strings.Repeat("x\n", n/2)
		m := FitCode(header, body, "output.txt")
		checkContent(t, m.Content)
		full := Len(header+"\n```\n"+codeBlock(body)+"\n```") <= MaxContent
		if full == (len(m.Files) == 1) {
			t.Errorf("n=%d: files = %d though the whole fits = %v", n, len(m.Files), full)
		}
	}
}

func TestTruncate(t *testing.T) {
	if got := Truncate("abcdef", 4); got != "abc…" {
		t.Errorf("Truncate = %q", got)
	}
	if got := Truncate("😀😀😀", 4); got != "😀…" {
		t.Errorf("Truncate astral = %q", got)
	}
}

// TestFeedbackModalTitleEscaped: a command name from a tool (an MCP server names its own)
// reaches the modal's plain-text title with its invisible characters shown as escapes.
func TestFeedbackModalTitleEscaped(t *testing.T) {
	tests := []struct{ name, command, want string }{
		{"bidi_override", "tool\u202eexe.txt", `Feedback on step 3: tool\u202eexe.txt`},
		{"newline", "tool\nApproved", `Feedback on step 3: tool\x0aApproved`},
		{"plain", "read_file", "Feedback on step 3: read_file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FeedbackModal(proposal("p-0123456789ab", tt.command, `{}`, "")).Data.Title
			if got != Truncate(tt.want, 45) {
				t.Errorf("title %q, want %q", got, Truncate(tt.want, 45))
			}
		})
	}
}

// TestSpansMentionOnlySnowflakes: a span's user becomes <@…> only when it is a Discord
// user id (a snowflake, bots.MentionID); anything else, such as a decision's By set by a
// local API caller, is escaped text that mentions no one.
func TestSpansMentionOnlySnowflakes(t *testing.T) {
	for _, c := range []struct{ name, user, want string }{
		{"snowflake", "123456789012345678", "by <@123456789012345678>"},
		{"closes_the_mention", "1><@&2>", "by " + Escape("1><@&2>")},
		{"everyone", "@everyone", "by " + Escape("@everyone")},
		{"slack_id", "U024BE7LH", "by U024BE7LH"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := markdown.Spans([]bots.Span{{Text: "by "}, {User: c.user}})
			if got != c.want || c.name != "snowflake" && strings.Contains(got, "<@") {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
