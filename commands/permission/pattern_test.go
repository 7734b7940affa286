package permission

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/testutil"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"command_alone", "read_file", "read_file(*)"},
		{"any_subject", "read_file(*)", "read_file(*)"},
		{"prefix_glob", "execute_shell(git status*)", "execute_shell(git status*)"},
		{"path_glob", "write_file(notes/*)", "write_file(notes/*)"},
		{"mcp_tool", "web.search(*)", "web.search(*)"},
		{"command_glob", "files.*(*)", "files.*(*)"},
		{"all_commands", "*(*)", "*(*)"},
		{"star_alone", "*", "*(*)"},
		{"command_question_mark", "read_fil?(x)", "read_fil?(x)"},
		{"name_characters", "my-server.tool_2(x)", "my-server.tool_2(x)"},
		{"double_star_alone_is_anything", "execute_shell(**)", "execute_shell(**)"},
		{"star_run_alone_is_anything", "execute_shell(****)", "execute_shell(**)"},
		{"double_star_inside_is_star", "read_file(a**b)", "read_file(a*b)"},
		{"double_star_suffix_is_star", "write_file(notes/**)", "write_file(notes/*)"},
		{"double_star_in_command_is_star", "**(x)", "*(x)"},
		{"empty_subject", "finish()", "finish()"},
		{"question_mark", "read_file(a?c)", "read_file(a?c)"},
		{"balanced_parens_stay_bare", "execute_shell(echo (a) b)", "execute_shell(echo (a) b)"},
		{"escaped_balanced_parens_print_bare", `execute_shell(echo \(a\))`, "execute_shell(echo (a))"},
		{"unpaired_paren_stays_escaped", `execute_shell(echo \(a)`, `execute_shell(echo \(a)`},
		{"unpaired_close_stays_escaped", `execute_shell(a\) (b))`, `execute_shell(a\) (b))`},
		{"escaped_wildcards", `read_file(\*\?\\)`, `read_file(\*\?\\)`},
		{"newline_escape", `execute_shell(a\nb)`, `execute_shell(a\nb)`},
		{"hex_newline_prints_short", `execute_shell(a\x0Ab)`, `execute_shell(a\nb)`},
		{"tab_and_cr", `execute_shell(\t\r)`, `execute_shell(\t\r)`},
		{"hex_printable_prints_bare", `read_file(caf\xc3\xa9)`, "read_file(café)"},
		{"hex_invalid_utf8_stays", `read_file(\xff)`, `read_file(\xff)`},
		{"hex_invisible_stays", `read_file(\xe2\x80\xae)`, `read_file(\xe2\x80\xae)`},
		{"unicode_literal", "read_file(notes/é ü.txt)", "read_file(notes/é ü.txt)"},
		{"spaces_in_subject", "execute_shell( git  status )", "execute_shell( git  status )"},
		{"max_length", "read_file(" + strings.Repeat("a", MaxPatternLen-11) + ")", "read_file(" + strings.Repeat("a", MaxPatternLen-11) + ")"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if got := p.String(); got != tt.want {
				t.Errorf("Parse(%q).String() = %q, want %q", tt.in, got, tt.want)
			}
			q, err := Parse(p.String())
			if err != nil {
				t.Fatalf("Parse(String()) = %v", err)
			}
			if q.String() != p.String() {
				t.Errorf("round trip: %q became %q", p.String(), q.String())
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, in string
		col      int
		problem  string
	}{
		{"empty_pattern", "", 1, "empty pattern"},
		{"empty_command", "(*)", 1, "empty command name"},
		{"uppercase_command", "Read_file(*)", 1, `'R' cannot appear in a command name`},
		{"space_in_command", "read file(*)", 5, `' ' cannot appear in a command name`},
		{"leading_space", " read_file", 1, `' ' cannot appear`},
		{"slash_in_command", "read/file", 5, `'/' cannot appear`},
		{"escape_in_command", `read\_file(*)`, 5, "escapes belong inside the parentheses"},
		{"close_without_open", "read_file)", 10, "unbalanced parentheses: ')' closes nothing"},
		{"never_closed", "read_file(*", 10, "unbalanced parentheses: '(' is never closed"},
		{"inner_paren_never_closed", "execute_shell(echo (a)", 14, "'(' is never closed"},
		{"extra_close", "read_file(*))", 13, "unbalanced parentheses: ')' closes nothing"},
		{"text_after_close", "read_file(*)x", 13, "unexpected text after the closing ')'"},
		{"second_group", "read_file(a)(b)", 13, "unexpected text after the closing ')'"},
		{"bad_escape", `read_file(\q)`, 11, `bad escape \q: only`},
		{"escaped_space", `execute_shell(a\ b)`, 16, `bad escape \ :`},
		{"trailing_backslash", `read_file(\`, 11, `ends in '\'`},
		{"bad_hex", `read_file(\xzz)`, 11, `\x needs two hex digits`},
		{"short_hex", `read_file(\x1)`, 11, `\x needs two hex digits`},
		{"hex_at_end", `read_file(\x`, 11, `\x needs two hex digits`},
		{"raw_newline", "execute_shell(a\nb)", 16, `control character U+000A must be written as an escape: \n`},
		{"raw_tab", "execute_shell(a\tb)", 16, `control character U+0009 must be written as an escape: \t`},
		{"raw_nul", "read_file(\x00)", 11, `control character U+0000 must be written as an escape: \x00`},
		{"raw_del", "read_file(\x7f)", 11, "control character U+007F"},
		{"raw_c1_control", "read_file(\u0085)", 11, `control character U+0085 must be written as an escape: \xc2\x85`},
		{"raw_bidi_override", "read_file(a\u202eb)", 12, `invisible character U+202E must be written as an escape: \xe2\x80\xae`},
		{"raw_zero_width_space", "read_file(\u200b)", 11, "invisible character U+200B"},
		{"raw_line_separator", "read_file(\u2028)", 11, "invisible character U+2028"},
		{"control_in_command", "read\x01file", 5, "control character U+0001"},
		{"invalid_utf8", "read_file(é\xff)", 12, "invalid UTF-8 (byte 0xff)"},
		{"too_long", "read_file(" + strings.Repeat("a", MaxPatternLen-10) + ")", MaxPatternLen + 1, "the pattern is 501 bytes: at most 500"},
		{"too_long_multibyte", strings.Repeat("é", 300), 251, "the pattern is 600 bytes"},
		{"command_too_long", strings.Repeat("a", 129) + "(*)", 129, "the command name is 129 bytes: at most 128"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %q, want an error", tt.in, p)
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not a *SyntaxError", err)
			}
			if se.Column != tt.col || !strings.Contains(se.Problem, tt.problem) {
				t.Errorf("Parse(%q): column %d, %q; want column %d, %q", tt.in, se.Column, se.Problem, tt.col, tt.problem)
			}
			if want := fmt.Sprintf("column %d: ", tt.col); !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
			if !p.IsZero() {
				t.Errorf("a failed Parse returned a non-zero pattern")
			}
		})
	}
}

func TestMustParsePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MustParse of a bad pattern did not panic")
		}
	}()
	MustParse("read_file(")
}

func TestPatternCommand(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"literal", "read_file(*)", "read_file"},
		{"glob", "files.*(x)", "files.*"},
		{"alone", "finish", "finish"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MustParse(tt.in).Command(); got != tt.want {
				t.Errorf("Command() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPatternText(t *testing.T) {
	var got struct{ Allow []Pattern }
	if err := json.Unmarshal([]byte(`{"allow":["read_file","execute_shell(git status*)"]}`), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Allow) != 2 || got.Allow[0].String() != "read_file(*)" || got.Allow[1].String() != "execute_shell(git status*)" {
		t.Fatalf("decoded %v", got.Allow)
	}
	out, err := json.Marshal(got.Allow)
	if err != nil {
		t.Fatal(err)
	}
	if want := `["read_file(*)","execute_shell(git status*)"]`; string(out) != want {
		t.Errorf("marshalled %s, want %s", out, want)
	}
	if err := json.Unmarshal([]byte(`["read_file("]`), &got.Allow); err == nil || !strings.Contains(err.Error(), "never closed") {
		t.Errorf("bad pattern in JSON: err = %v", err)
	}
}

func TestExact(t *testing.T) {
	tests := []struct {
		name, command, subject, want, err string
	}{
		{"plain", "read_file", "notes/a.txt", "read_file(notes/a.txt)", ""},
		{"wildcards_escaped", "read_file", `a*?\b`, `read_file(a\*\?\\b)`, ""},
		{"parens", "execute_shell", "echo (a) )", `execute_shell(echo (a) \))`, ""},
		{"newline", "execute_shell", "a\nb\x00", `execute_shell(a\nb\x00)`, ""},
		{"invalid_utf8", "execute_shell", "a\xffb", `execute_shell(a\xffb)`, ""},
		{"empty_subject", "finish", "", "finish()", ""},
		{"glob_command_refused", "read_*", "x", "", "is not a command name"},
		{"empty_command_refused", "", "x", "", "is not a command name"},
		{"too_long", "execute_shell", strings.Repeat("x", MaxPatternLen), "", "would be 515 bytes: at most 500"},
		{"escapes_count_toward_length", "execute_shell", strings.Repeat("\n", 243), "", "would be 501 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Exact(tt.command, tt.subject)
			if testutil.WantErr(t, err, tt.err) {
				return
			}
			if p.String() != tt.want {
				t.Errorf("Exact = %q, want %q", p, tt.want)
			}
			if q := MustParse(p.String()); q.String() != p.String() {
				t.Errorf("round trip %q -> %q", p, q)
			}
		})
	}
}

func TestEscape(t *testing.T) {
	if got, want := Escape("a*(b)\t"), `a\*\(b\)\t`; got != want {
		t.Errorf("Escape = %q, want %q", got, want)
	}
}

// Escape returns s written as glob text that matches exactly s: wildcards, backslashes and
// parentheses escaped, control and invisible characters and invalid UTF-8 as \n, \r, \t or \xHH.
func Escape(s string) string {
	var b strings.Builder
	writeLiteral(&b, s, nil)
	return b.String()
}
