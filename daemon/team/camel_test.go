package team

import "testing"

func TestDetect(t *testing.T) {
	ins := func(s string) Msg { return Msg{Role: "ceo", Text: s} }
	asst := func(s string) Msg { return Msg{Role: "cto", Assistant: true, Text: s} }
	cases := []struct {
		name string
		tr   []Msg
		want string // mode, "" for none
	}{
		{"healthy", []Msg{ins("Instruction: pick a language for a CLI tool."), asst("Solution: Go, because it builds one static binary.")}, ""},
		{"role_flip", []Msg{ins("Instruction: pick a language."), asst("Instruction: tell me which platforms matter first.")}, ModeRoleFlip},
		{"role_flip_task", []Msg{ins("Pick a language."), asst("Good question.\nYour task is to list the platforms.")}, ModeRoleFlip},
		{"repeated_instruction", []Msg{ins("Instruction: pick a language for the command line tool."), asst("Pick a language for the command line tool.")}, ModeRepeat},
		{"flake", []Msg{ins("Instruction: write the parser."), asst("Sure, I will write the parser now.")}, ModeFlake},
		{"flake_lets", []Msg{ins("Instruction: write the parser."), asst("Let me think about the parser.")}, ModeFlake},
		{"not_flake_with_code", []Msg{ins("Instruction: write the parser."), asst("I will write it:\n```go\nfunc parse() {}\n```")}, ""},
		{"thanks_loop", []Msg{ins("Instruction: x."), asst("Thank you, great working with you!"), ins("Thanks, goodbye!")}, ModeLoop},
		{"one_thanks_is_fine", []Msg{ins("Instruction: write tests."), asst("Thanks! Solution: three table tests cover it.")}, ""},
		{"near_duplicate", []Msg{
			ins("Instruction: add error handling to the parser."),
			asst("Solution: the parser returns an error naming the line."),
			ins("Instruction: add error handling to the parser."),
		}, ModeLoop},
		{"instructor_flake_not_checked", []Msg{ins("I will think about it.")}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := Detect(c.tr)
			got := ""
			if f != nil {
				got = f.Mode
				if f.Reason == "" {
					t.Error("failure without a reason")
				}
			}
			if got != c.want {
				t.Errorf("Detect = %+v, want mode %q", f, c.want)
			}
		})
	}
}
