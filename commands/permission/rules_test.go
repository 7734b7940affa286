package permission

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/internal/testutil"
)

func shellArgs(line string) json.RawMessage {
	b, err := json.Marshal(map[string]string{"command": line})
	if err != nil {
		panic(err)
	}
	return b
}

func rules(layer string, allow, deny []string) Rules {
	r, err := ParseRules(layer, allow, deny)
	if err != nil {
		panic(err)
	}
	return r
}

func TestSubject(t *testing.T) {
	ordered := commands.Spec{Name: "two", Params: commands.Object(
		commands.Prop{Name: "b", Schema: commands.String("", 10)},
		commands.Prop{Name: "a", Schema: commands.String("", 10)},
	)}
	tests := []struct {
		name string
		spec commands.Spec
		args string
		want string
	}{
		{"subject_param", readSpec, `{"path":"notes/a.txt"}`, "notes/a.txt"},
		{"subject_param_exact_value", readSpec, `{"path":" notes/a.txt\n"}`, " notes/a.txt\n"},
		{"subject_param_escapes_decoded", shellSpec, `{"command":"a\u000ab\u0000"}`, "a\nb\x00"},
		{"subject_param_only", writeSpec, `{"path":"a.txt","content":"rm -rf ~"}`, "a.txt"},
		{"subject_param_not_string_falls_back", writeSpec, `{"path":5,"content":"text"}`, "text"},
		{"subject_param_missing_falls_back", writeSpec, `{"content":"text"}`, "text"},
		{"joined_in_param_order", ordered, `{"a":"1","b":"2"}`, "2 1"},
		{"empty_strings_kept", ordered, `{"a":"x","b":""}`, " x"},
		{"non_strings_ignored", mcpSpec, `{"limit":5,"query":"go","tags":["x"],"opt":{"k":"v"},"n":null,"t":true}`, "go"},
		{"unlisted_strings_follow_sorted", mcpSpec, `{"zz":"last","query":"go","extra":"mid"}`, "go mid last"},
		{"no_params", noClassSpec, `{"b":"2","a":"1"}`, "1 2"},
		{"empty_args", readSpec, ``, ""},
		{"empty_object", readSpec, `{}`, ""},
		{"not_an_object", readSpec, `["notes/a"]`, ""},
		{"invalid_json", readSpec, `{"path":`, ""},
		{"duplicate_last_wins", readSpec, `{"path":"a","path":"b"}`, "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Subject(tt.spec, json.RawMessage(tt.args)); got != tt.want {
				t.Errorf("Subject(%s) = %q, want %q", tt.args, got, tt.want)
			}
		})
	}
}

func TestParseRules(t *testing.T) {
	r, err := ParseRules("global", []string{"read_file", "execute_shell(git status*)"}, []string{"read_file(secrets/*)"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Layer != "global" || len(r.Allow) != 2 || len(r.Deny) != 1 || r.Allow[0].String() != "read_file(*)" {
		t.Fatalf("ParseRules = %+v", r)
	}

	tests := []struct {
		name        string
		layer       string
		allow, deny []string
		want        []string // each must appear, in order
		problems    int
	}{
		{"one_bad_allow", "", []string{"read_file(*)", "Bad("}, nil,
			[]string{`allow[1]: permission pattern "Bad(": column 1:`}, 1},
		{"every_problem", "agent", []string{"ok", "x(", "y)"}, []string{"(", "fine", `z(\q)`},
			[]string{
				"agent permissions: ",
				`allow[1]: permission pattern "x(": column 2: unbalanced parentheses`,
				`allow[2]: permission pattern "y)": column 2: unbalanced parentheses`,
				`deny[0]: permission pattern "(": column 1: empty command name`,
				`deny[2]: permission pattern "z(\\q)": column 3: bad escape \q`,
			}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseRules(tt.layer, tt.allow, tt.deny)
			if err == nil {
				t.Fatalf("ParseRules = %+v, want an error", r)
			}
			msg := err.Error()
			rest := msg
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("error %q lacks %q (or has it out of order)", msg, w)
				}
				rest = rest[i+len(w):]
			}
			if n := strings.Count(msg, "permission pattern"); n != tt.problems {
				t.Errorf("error reports %d problems, want %d: %q", n, tt.problems, msg)
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Errorf("errors.As(*SyntaxError) fails on %v", err)
			}
		})
	}
}

func TestEvaluate(t *testing.T) {
	empty := Rules{Layer: "global"}
	tests := []struct {
		name   string
		spec   commands.Spec
		args   string
		opts   Options
		layers []Rules
		want   Verdict
	}{
		{"no_rules_ask", readSpec, `{"path":"a"}`, Options{}, nil,
			Verdict{Effect: Ask, Reason: "asking: no allow pattern matches"}},
		{"global_allow", readSpec, `{"path":"a"}`, Options{},
			[]Rules{rules("global", []string{"read_file"}, nil), rules("agent", nil, nil)},
			Verdict{Effect: Allow, Pattern: "read_file(*)", Layer: "global", Reason: "auto-approved by read_file(*) (global rules)"}},
		{"agent_allow", writeSpec, `{"path":"notes/a","content":"x"}`, Options{},
			[]Rules{rules("global", []string{"read_file"}, nil), rules("agent", []string{"write_file(notes/*)"}, nil)},
			Verdict{Effect: Allow, Pattern: "write_file(notes/*)", Layer: "agent", Reason: "auto-approved by write_file(notes/*) (agent rules)"}},
		{"first_allow_in_layer_order", readSpec, `{"path":"a"}`, Options{},
			[]Rules{rules("global", []string{"write_file", "read_file(a)"}, nil), rules("agent", []string{"read_file"}, nil)},
			Verdict{Effect: Allow, Pattern: "read_file(a)", Layer: "global", Reason: "auto-approved by read_file(a) (global rules)"}},
		{"global_deny_beats_agent_allow", readSpec, `{"path":"secrets/k"}`, Options{},
			[]Rules{rules("global", nil, []string{"read_file(secrets/*)"}), rules("agent", []string{"read_file(secrets/k)"}, nil)},
			Verdict{Effect: Deny, Pattern: "read_file(secrets/*)", Layer: "global", Reason: "denied by read_file(secrets/*) (global rules)"}},
		{"agent_deny_beats_global_allow", readSpec, `{"path":"secrets/k"}`, Options{},
			[]Rules{rules("global", []string{"read_file"}, nil), rules("agent", nil, []string{"read_file(secrets/k)"})},
			Verdict{Effect: Deny, Pattern: "read_file(secrets/k)", Layer: "agent", Reason: "denied by read_file(secrets/k) (agent rules)"}},
		{"deny_in_same_layer_beats_allow", readSpec, `{"path":"secrets/k"}`, Options{},
			[]Rules{rules("agent", []string{"read_file"}, []string{"*(secrets/*)"})},
			Verdict{Effect: Deny, Pattern: "*(secrets/*)", Layer: "agent", Reason: "denied by *(secrets/*) (agent rules)"}},
		{"deny_other_subject_no_effect", readSpec, `{"path":"notes/k"}`, Options{},
			[]Rules{rules("agent", []string{"read_file"}, []string{"read_file(secrets/*)"})},
			Verdict{Effect: Allow, Pattern: "read_file(*)", Layer: "agent", Reason: "auto-approved by read_file(*) (agent rules)"}},
		{"unnamed_layer", readSpec, `{"path":"a"}`, Options{}, []Rules{rules("", []string{"read_file"}, nil)},
			Verdict{Effect: Allow, Pattern: "read_file(*)", Reason: "auto-approved by read_file(*)"}},
		{"auto_read_allows_read", readSpec, `{"path":"a"}`, Options{AutoRead: true}, []Rules{empty},
			Verdict{Effect: Allow, Reason: "auto-approved: read commands run without asking (auto_read)"}},
		{"auto_read_pattern_named_first", readSpec, `{"path":"a"}`, Options{AutoRead: true}, []Rules{rules("agent", []string{"read_file(a)"}, nil)},
			Verdict{Effect: Allow, Pattern: "read_file(a)", Layer: "agent", Reason: "auto-approved by read_file(a) (agent rules)"}},
		{"auto_read_deny_still_wins", readSpec, `{"path":"secrets/k"}`, Options{AutoRead: true}, []Rules{rules("global", nil, []string{"read_file(secrets/*)"})},
			Verdict{Effect: Deny, Pattern: "read_file(secrets/*)", Layer: "global", Reason: "denied by read_file(secrets/*) (global rules)"}},
		{"auto_read_not_write", writeSpec, `{"path":"a","content":""}`, Options{AutoRead: true}, []Rules{empty},
			Verdict{Effect: Ask, Reason: "asking: no allow pattern matches"}},
		{"auto_read_not_network", webpageSpec, `{"url":"https://x.example/"}`, Options{AutoRead: true}, []Rules{empty},
			Verdict{Effect: Ask, Reason: "asking: no allow pattern matches"}},
		{"auto_read_not_execute", shellSpec, `{"command":"cat a"}`, Options{AutoRead: true}, []Rules{empty},
			Verdict{Effect: Ask, Reason: "asking: no allow pattern matches"}},
		{"auto_read_off_asks", readSpec, `{"path":"a"}`, Options{}, []Rules{empty},
			Verdict{Effect: Ask, Reason: "asking: no allow pattern matches"}},
		{"execute_literal_allow", shellSpec, `{"command":"git status -s"}`, Options{},
			[]Rules{rules("agent", []string{"execute_shell(git status*)"}, nil)},
			Verdict{Effect: Allow, Pattern: "execute_shell(git status*)", Layer: "agent", Reason: "auto-approved by execute_shell(git status*) (agent rules)"}},
		{"execute_metachar_asks", shellSpec, `{"command":"git status; rm -rf ~"}`, Options{},
			[]Rules{rules("agent", []string{"execute_shell(git status*)"}, nil)},
			Verdict{Effect: Ask, Reason: "asking: no allow pattern matches"}},
		{"execute_deny_by_command_glob", shellSpec, `{"command":"git status; rm -rf ~"}`, Options{},
			[]Rules{rules("global", nil, []string{"*(*rm -rf*)"}), rules("agent", []string{"execute_shell(**)"}, nil)},
			Verdict{Effect: Deny, Pattern: "*(*rm -rf*)", Layer: "global", Reason: "denied by *(*rm -rf*) (global rules)"}},
		{"duplicate_key_asks", readSpec, `{"path":"secrets/k","path":"notes/a"}`, Options{AutoRead: true},
			[]Rules{rules("agent", []string{"read_file(notes/*)"}, nil)},
			Verdict{Effect: Ask, Reason: `asking: arg "path" appears twice`}},
		{"case_duplicate_asks", readSpec, `{"path":"notes/a","PATH":"secrets/k"}`, Options{AutoRead: true},
			[]Rules{rules("agent", []string{"read_file"}, nil)},
			Verdict{Effect: Ask, Reason: `asking: args "path" and "PATH" differ only in case`}},
		{"kelvin_sign_duplicate_asks", shellSpec, `{"k":"ls","\u212a":"rm"}`, Options{},
			[]Rules{rules("agent", []string{"execute_shell(**)"}, nil)},
			Verdict{Effect: Ask, Reason: "asking: args \"k\" and \"\u212a\" differ only in case"}},
		{"not_object_asks", readSpec, `"notes/a"`, Options{AutoRead: true}, []Rules{rules("agent", []string{"read_file"}, nil)},
			Verdict{Effect: Ask, Reason: "asking: args are not a JSON object"}},
		{"trailing_data_asks", readSpec, `{"path":"a"} {"path":"b"}`, Options{AutoRead: true}, []Rules{rules("agent", []string{"read_file"}, nil)},
			Verdict{Effect: Ask, Reason: "asking: args are not valid JSON: text after the object"}},
		{"ambiguous_args_still_denied", readSpec, `{"path":"a","path":"secrets/k"}`, Options{},
			[]Rules{rules("agent", nil, []string{"read_file(secrets/*)"})},
			Verdict{Effect: Deny, Pattern: "read_file(secrets/*)", Layer: "agent", Reason: "denied by read_file(secrets/*) (agent rules)"}},
		{"empty_args", replySpec, ``, Options{}, []Rules{rules("agent", []string{"reply()"}, nil)},
			Verdict{Effect: Allow, Pattern: "reply()", Layer: "agent", Reason: "auto-approved by reply() (agent rules)"}},
		{"empty_args_no_path", readSpec, ``, Options{AutoRead: true}, []Rules{rules("agent", []string{"read_file()"}, nil)},
			Verdict{Effect: Ask, Reason: `asking: no rule approves a path outside the workspace: path "" is empty; use "." for the workspace folder itself`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Evaluate(tt.spec, json.RawMessage(tt.args), tt.opts, tt.layers...)
			if got != tt.want {
				t.Errorf("Evaluate =\n %+v\nwant\n %+v", got, tt.want)
			}
		})
	}
}

// TestExecuteNeedsLiteralAllow: no wildcard command part, in any layer and with AutoRead,
// lets an execute command run unasked; only a pattern naming it does.
func TestExecuteNeedsLiteralAllow(t *testing.T) {
	tests := []struct {
		name    string
		spec    commands.Spec
		pattern string
		want    Effect
	}{
		{"all_commands", shellSpec, "*(*)", Ask},
		{"all_commands_anything", shellSpec, "*(**)", Ask},
		{"star_alone", shellSpec, "*", Ask},
		{"name_prefix_glob", shellSpec, "execute_*(*)", Ask},
		{"name_question_mark", shellSpec, "execute_shel?(*)", Ask},
		{"literal", shellSpec, "execute_shell", Allow},
		{"literal_anything", shellSpec, "execute_shell(**)", Allow},
		{"mcp_server_glob", mcpSpec, "web.*(*)", Ask},
		{"mcp_literal", mcpSpec, "web.search(*)", Allow},
		{"unknown_class_glob", noClassSpec, "*(*)", Ask},
		{"unknown_class_literal", noClassSpec, "mystery", Allow},
		{"read_by_glob", readSpec, "*(*)", Allow},
		{"write_by_glob", writeSpec, "*_file(*)", Allow},
		{"network_by_glob", webpageSpec, "read_*(*)", Allow},
		{"message_by_glob", replySpec, "*", Allow},
	}
	args := map[string]string{
		"execute_shell": `{"command":"ls -l"}`, "web.search": `{"query":"go","limit":3}`, "mystery": `{}`,
		"read_file": `{"path":"a"}`, "write_file": `{"path":"a","content":"b"}`,
		"read_webpage": `{"url":"https://x.example/"}`, "reply": `{"text":"hi"}`,
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			layers := []Rules{rules("global", []string{tt.pattern}, nil), rules("agent", []string{tt.pattern}, nil)}
			got := Evaluate(tt.spec, json.RawMessage(args[tt.spec.Name]), Options{AutoRead: true}, layers...)
			if got.Effect != tt.want {
				t.Errorf("Evaluate(%s) with %s = %+v, want %s", tt.spec.Name, tt.pattern, got, tt.want)
			}
		})
	}
}

func TestAlwaysPattern(t *testing.T) {
	finishSpec := commands.Spec{Name: "finish", Class: commands.ClassMessage, Params: commands.Object()}
	tests := []struct {
		name string
		spec commands.Spec
		args string
		want string
		err  string
		not  []string // nearby subjects the pattern must not approve
	}{
		{"shell_exact_line", shellSpec, `{"command":"git status"}`, "execute_shell(git status)", "",
			[]string{"git status ", "git status -s", "git statu", "Git status"}},
		{"shell_metachars_literal", shellSpec, `{"command":"make && make install"}`, "execute_shell(make && make install)", "",
			[]string{"make && make install; rm -rf ~", "make && make instal"}},
		{"shell_glob_chars_escaped", shellSpec, `{"command":"ls *.go (x) ?"}`, `execute_shell(ls \*.go (x) \?)`, "",
			[]string{"ls a.go (x) ?", "ls *.go (x) a"}},
		{"shell_newline_escaped", shellSpec, `{"command":"a\nb"}`, `execute_shell(a\nb)`, "",
			[]string{"a\nbc", "a b", "a\r\nb"}},
		{"file_path", readSpec, `{"path":"notes/a*.txt"}`, `read_file(notes/a\*.txt)`, "",
			[]string{"notes/ab.txt", "notes/a*.txt/x"}},
		{"file_dotdot_exact", writeSpec, `{"path":"../x","content":"y"}`, "write_file(../x)", "",
			[]string{"../y"}}, // stored, but never approves: the path leaves the workspace
		{"file_cleaned", writeSpec, `{"path":"./notes//a","content":"y"}`, "write_file(notes/a)", "",
			[]string{"notes/b", "notes"}},
		{"mcp_joined_subject", mcpSpec, `{"query":"go; x","limit":3}`, "web.search(go; x)", "",
			[]string{"go; y"}},
		{"empty_subject", finishSpec, `{}`, "finish()", "", []string{"x"}},
		{"too_long", shellSpec, `{"command":"` + strings.Repeat("x", 600) + `"}`, "", "at most 500", nil},
		{"ambiguous_args", readSpec, `{"path":"a","path":"b"}`, "", `read_file: arg "path" appears twice`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, build := range []func(commands.Spec, json.RawMessage) (Pattern, error){AlwaysPattern, DenyPattern} {
				p, err := build(tt.spec, json.RawMessage(tt.args))
				if testutil.WantErr(t, err, tt.err) {
					continue
				}
				if p.String() != tt.want {
					t.Fatalf("pattern = %q, want %q", p, tt.want)
				}
				subject := Subject(tt.spec, json.RawMessage(tt.args))
				if p.Allows(tt.spec, subject) != !outside(tt.spec, subject) || !p.Denies(tt.spec, subject) {
					t.Errorf("%s does not match its own subject %q", p, subject)
				}
				for _, n := range tt.not {
					if p.Allows(tt.spec, n) || (p.Denies(tt.spec, n) && !(tt.spec.Name == "execute_shell" && sameCommands(subject, n))) {
						t.Errorf("%s matches %q", p, n)
					}
				}
			}
			if tt.err != "" {
				return
			}
			// Stored as text and read back, it still approves the proposal.
			p, _ := AlwaysPattern(tt.spec, json.RawMessage(tt.args))
			stored := rules("agent", []string{p.String()}, nil)
			if v := Evaluate(tt.spec, json.RawMessage(tt.args), Options{}, stored); outside(tt.spec, Subject(tt.spec, json.RawMessage(tt.args))) {
				if v.Effect != Ask {
					t.Errorf("Evaluate with the stored pattern for a path outside = %+v, want ask", v)
				}
			} else if v.Effect != Allow || v.Pattern != tt.want {
				t.Errorf("Evaluate with the stored pattern = %+v", v)
			}
			denied := rules("agent", nil, []string{p.String()})
			if v := Evaluate(tt.spec, json.RawMessage(tt.args), Options{}, denied); v.Effect != Deny {
				t.Errorf("Evaluate with the stored deny pattern = %+v", v)
			}
		})
	}
}

// outside reports whether subject is a file command's path that leaves the workspace.
func outside(spec commands.Spec, subject string) bool {
	t := newTarget(spec, subject)
	return (t.kind == kindPath || t.kind == kindFolder || t.kind == kindSearch) && !t.clean
}

// TestRisksFlagEachProgramsRule: each program rule of risks, one case a rule (and a name of
// each alias group), flags the arguments it names, with the rule's reason, and nothing in a
// plain call of the same program.
func TestRisksFlagEachProgramsRule(t *testing.T) {
	never := "a wildcard never approves "
	cases := []struct {
		name, line string
		want       string // "ARG:REASON" per risk, joined by " | "; "" for none
	}{
		{"runner_is_risky_whatever_its_args", "env ls", "-1:" + never + "env, which runs other commands or code"},
		{"interpreter_code_flag", "python3 -c print(1)", "0:" + never + "python3 running code given on its command line | 1:" + never + "python3 running code given on its command line"},
		{"interpreter_script_is_plain", "python3 main.py", ""},
		{"git_plain", "git status -s", ""},
		{"git_unknown_subcommand", "git lg", "0:git lg is not one of git's builtin commands: an alias or a git-lg program could run anything"},
		{"go_generate", "go generate ./...", "0:" + never + "go generate, which runs the commands its comments name"},
		{"sed_write_command", "sed w/tmp/x f", "0:" + never + "a sed script that runs commands (e) or writes files (w)"},
		{"tar_long_option", "tar --to-command=sh -xf a.tar", "0:" + never + "tar running a program (--to-command, -I, --checkpoint-action, …) | 1:" + never + "tar running a program (--to-command, -I, --checkpoint-action, …)"},
		{"tar_old_style_letters", "tar xIf prog a.tar", "0:" + never + "tar running a program (--to-command, -I, --checkpoint-action, …) | 1:" + never + "tar running a program (--to-command, -I, --checkpoint-action, …)"},
		{"tar_plain", "tar -xzf a.tar", ""},
		{"find_exec", "find . -exec rm {} ;", "1:" + never + "find's -exec, -ok, -delete or -fprint actions | 2:" + never + "find's -exec, -ok, -delete or -fprint actions"},
		{"rsync_rsh", "rsync -e sh a b", "0:" + never + "rsync's -e or --rsync-path, which run a program | 1:" + never + "rsync's -e or --rsync-path, which run a program"},
		{"sftp_names_itself", "sftp -S prog host", "0:" + never + "sftp's -S, -o or -F, which run a program | 1:" + never + "sftp's -S, -o or -F, which run a program"},
		{"zip_tt", "zip -TT cmd a.zip", "0:" + never + "zip's -TT, which runs a program | 1:" + never + "zip's -TT, which runs a program"},
		{"gawk_system", "gawk {system(x)}", "0:" + never + "an awk program that runs commands, writes files or loads code"},
		{"awk_plain", "awk {print}", ""},
		{"more_plus_command", "more +!sh f", "0:" + never + "more's +command, which can run a shell | 1:" + never + "more's +command, which can run a shell"},
		{"man_pager", "man --pager=sh ls", "0:" + never + "man's pager or browser options | 1:" + never + "man's pager or browser options"},
		{"gmake_variable", "gmake CC=sh", "0:" + never + "make given variables, --eval or another makefile or folder, which can run any command"},
		{"make_plain", "make test", ""},
		{"sort_compress_program", "sort --compress-program=sh f", "0:" + never + "sort's --compress-program, which runs a program | 1:" + never + "sort's --compress-program, which runs a program"},
		{"pnpm_exec", "pnpm exec y", "0:" + never + "pnpm running a command or shell it is given (exec, --call, --script-shell) | 1:" + never + "pnpm running a command or shell it is given (exec, --call, --script-shell)"},
		{"patch_ed", "patch -e f", "0:" + never + "patch's ed scripts, which can run commands | 1:" + never + "patch's ed scripts, which can run commands"},
		{"clang_plugin", "clang -fplugin=x.so a.c", "0:" + never + "a compiler option that runs or loads another program (-wrapper, -fplugin, -B, -specs) | 1:" + never + "a compiler option that runs or loads another program (-wrapper, -fplugin, -B, -specs)"},
		{"cargo_config", "cargo -Zunstable build", "0:" + never + "cargo's --config, which can name a program to run | 1:" + never + "cargo's --config, which can name a program to run"},
		{"sqlite3_dot_command", "sqlite3 db .shell", "1:" + never + "sqlite3 dot-commands, which can run a shell or write files"},
		{"rg_pre", "rg --pre sh x", "0:" + never + "rg's --pre or --hostname-bin, which run a program | 1:" + never + "rg's --pre or --hostname-bin, which run a program"},
		{"fdfind_exec", "fdfind -x rm", "0:" + never + "fdfind's -x or -X, which run a command for the files found | 1:" + never + "fdfind's -x or -X, which run a command for the files found"},
		{"batcat_pager", "batcat --pager=sh f", "0:" + never + "batcat's --pager, which runs a program | 1:" + never + "batcat's --pager, which runs a program"},
		{"sdiff_diff_program", "sdiff --diff-program=sh a b", "0:" + never + "sdiff's --diff-program, which runs a program | 1:" + never + "sdiff's --diff-program, which runs a program"},
		{"curl_config_file", "curl -K f", "0:" + never + "curl reading its options from a file or loading an engine | 1:" + never + "curl reading its options from a file or loading an engine"},
		{"curl_plain", "curl -s https://example.com", ""},
		{"wget_execute", "wget -e x", "0:" + never + "wget's -e, --config or --use-askpass | 1:" + never + "wget's -e, --config or --use-askpass"},
		{"openssl_double_dash_engine", "openssl --engine x", "0:" + never + "openssl loading an engine, a provider or a config file, which load code | 1:" + never + "openssl loading an engine, a provider or a config file, which load code"},
		{"unknown_program_is_plain", "ls -la --exec", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := strings.Fields(c.line)
			var got []string
			for _, r := range risks(simpleCmd{prog: w[0], args: w[1:]}) {
				got = append(got, fmt.Sprintf("%d:%s", r.arg, r.reason))
			}
			if g := strings.Join(got, " | "); g != c.want {
				t.Fatalf("risks(%q)\n got %s\nwant %s", c.line, g, c.want)
			}
		})
	}
}

// TestOptionRulesNameEachProgramOnce: every program of an option rule finds its rule, and
// none is also a runner or interpreter (whose check comes first and would hide the rule).
func TestOptionRulesNameEachProgramOnce(t *testing.T) {
	for _, r := range optionRules {
		for _, p := range strings.Fields(r.progs) {
			if runners[p] || interpreters[p] {
				t.Errorf("%s has an option rule but is a runner or interpreter: the rule is never used", p)
			}
			if got := optionRuleOf[p]; got.reason != r.reason {
				t.Errorf("optionRuleOf[%q] is another rule's: %q", p, got.reason)
			}
		}
	}
}
