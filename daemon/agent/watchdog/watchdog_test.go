package watchdog

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/config"
)

// call is one step of a scripted run: what the model proposed and how it went.
type call struct {
	cmd, args, outcome, result string
}

func ok(cmd, args, result string) call   { return call{cmd, args, Succeeded, result} }
func bad(cmd, args, errText string) call { return call{cmd, args, Failed, "Error: " + errText} }

var classes = map[string]commands.Class{
	"list_folder": commands.ClassRead, "read_file": commands.ClassRead, "search_files": commands.ClassRead,
	"write_file": commands.ClassWriteWorkspace, "append_to_file": commands.ClassWriteWorkspace, "delete_file": commands.ClassWriteWorkspace,
	"execute_shell": commands.ClassExecute, "read_webpage": commands.ClassNetwork,
	"ask_user": commands.ClassMessage, "finish": commands.ClassMessage,
}

// defaults are the thresholds the daemon passes unless its config changes them.
var defaults = func() Config {
	a := config.Default().Agent
	return Config{Failures: a.WatchdogFailures, IdleSteps: a.WatchdogIdleSteps}
}()

// firstCatch runs Check before each step, as the supervisor does when the step is
// proposed, and returns the first step caught (0: none) with its verdict.
func firstCatch(cfg Config, calls []call) (int, Verdict) {
	var h []Step
	for i, c := range calls {
		n := i + 1
		if v := Check(cfg, h, Observe(n, c.cmd, json.RawMessage(c.args), classes[c.cmd], "", "")); v.Caught() {
			return n, v
		}
		h = append(h, Observe(n, c.cmd, json.RawMessage(c.args), classes[c.cmd], c.outcome, c.result))
	}
	return 0, Verdict{}
}

func path(p string) string { return fmt.Sprintf(`{"path":%q}`, p) }
func shell(line string) string {
	return fmt.Sprintf(`{"command_line":%q}`, line)
}
func write(p, text string) string { return fmt.Sprintf(`{"path":%q,"contents":%q}`, p, text) }
func appendText(p, text string) string {
	return fmt.Sprintf(`{"path":%q,"text":%q}`, p, text)
}
func lines(p string, from, to int) string {
	return fmt.Sprintf(`{"path":%q,"start_line":%d,"end_line":%d}`, p, from, to)
}

// TestLoopShapes: every shape is caught, at the step that would go round once more, and
// not before.
func TestLoopShapes(t *testing.T) {
	list := ok("list_folder", path("."), "notes.txt\nsrc/")
	notes := ok("read_file", path("notes.txt"), "buy milk")
	a, b, c, d := ok("read_file", path("a"), "A"), ok("read_file", path("b"), "B"), ok("read_file", path("c"), "C"), ok("read_file", path("d"), "D")
	var missing []call
	for i := range 12 {
		missing = append(missing, bad("read_file", path(fmt.Sprintf("gone%d.txt", i)), fmt.Sprintf("read_file: open gone%d.txt: no such file or directory", i)))
	}
	var sameContent []call
	for i := range 12 {
		sameContent = append(sameContent, ok("read_file", path(fmt.Sprintf("copy%d.txt", i)), "TODO"))
	}
	tests := []struct {
		name   string
		cfg    Config
		calls  []call
		want   Kind
		at     int
		period int
	}{
		{name: "period_1_same_call", calls: []call{list, list}, want: Repeat, at: 2, period: 1},
		{name: "period_1_finish_repeated", calls: []call{bad("finish", `{"reason":"done"}`, "x"), ok("finish", `{"reason":"done"}`, "")}, want: Repeat, at: 2, period: 1},
		{name: "period_1_cleaned_path", calls: []call{list, ok("list_folder", path("./"), "")}, want: Repeat, at: 2, period: 1},
		{name: "period_1_dotted_path", calls: []call{notes, ok("read_file", path("src/../notes.txt "), "")}, want: Repeat, at: 2, period: 1},
		{name: "period_1_key_order", calls: []call{ok("read_file", lines("a", 1, 9), "x"), ok("read_file", `{"end_line":9,"start_line":1,"path":"a"}`, "")}, want: Repeat, at: 2, period: 1},
		{name: "period_1_tracking_parameter", calls: []call{
			ok("read_webpage", `{"url":"https://Example.com/news?id=4"}`, "page"),
			ok("read_webpage", `{"url":"https://example.com:443/news?utm_source=x&id=4#top"}`, ""),
		}, want: Repeat, at: 2, period: 1},
		{name: "period_2_flip_flop", calls: []call{list, notes, list, notes, list}, want: Cycle, at: 4, period: 2},
		{name: "period_3", calls: []call{a, b, c, a, b, c}, want: Cycle, at: 6, period: 3},
		{name: "period_4", calls: []call{a, b, c, d, a, b, c, d}, want: Cycle, at: 8, period: 4},
		{name: "period_2_after_progress", calls: []call{ok("write_file", write("x", "1"), ""), a, b, a, b}, want: Cycle, at: 5, period: 2},
		{name: "failing_streak_different_files", calls: missing, want: Failing, at: 4},
		{name: "failing_streak_threshold_5", cfg: Config{Failures: 5, IdleSteps: defaults.IdleSteps}, calls: missing, want: Failing, at: 6},
		{name: "failing_shell_same_exit", calls: []call{
			bad("execute_shell", shell("make a"), "exit status 2\nmake: *** No rule to make target 'a'"),
			bad("execute_shell", shell("make b"), "exit status 2\nmake: *** No rule to make target 'b'"),
			bad("execute_shell", shell("make c"), "exit status 2\nmake: *** No rule to make target 'c'"),
			bad("execute_shell", shell("make d"), "exit status 2\nmake: *** No rule to make target 'd'"),
		}, want: Failing, at: 4},
		{name: "no_progress_same_content", calls: sameContent, want: NoProgress, at: 10},
		{name: "no_progress_threshold_4", cfg: Config{Failures: defaults.Failures, IdleSteps: 4}, calls: sameContent, want: NoProgress, at: 6},
		{name: "no_progress_mixed", calls: []call{
			list, ok("list_folder", path("src"), "x.go"), bad("read_file", path("q"), "no such file"), ok("list_folder", path("./src/"), "x.go"),
			bad("execute_shell", shell("cat q"), "permission denied"), ok("list_folder", path("docs"), "notes.txt\nsrc/"),
			bad("read_file", path("r"), "no such file"), ok("list_folder", path("."), "notes.txt\nsrc/"), bad("search_files", `{"pattern":"*.md"}`, "timed out"),
			ok("list_folder", path("src"), "x.go"), ok("list_folder", path("lib"), "x.go"),
		}, want: NoProgress, at: 11},
		{name: "undo_write_then_delete", calls: []call{
			ok("write_file", write("tmp.txt", "draft"), ""), ok("delete_file", path("tmp.txt"), ""),
			ok("write_file", write("tmp.txt", "draft"), ""), ok("delete_file", path("tmp.txt"), ""),
		}, want: Undo, at: 4},
		{name: "undo_restore_interleaved", calls: []call{
			ok("write_file", write("cfg", "B"), ""), ok("read_file", path("x"), "1"), ok("execute_shell", shell("make"), "ok"),
			ok("write_file", write("cfg", "A"), ""), ok("read_file", path("y"), "2"), ok("execute_shell", shell("make test"), "ok"),
			ok("write_file", write("cfg", "B"), ""), ok("read_file", path("z"), "3"),
			ok("write_file", write("cfg", "A"), ""),
		}, want: Undo, at: 9},
		{name: "undo_append_same_text", calls: []call{
			ok("append_to_file", appendText("log.md", "- checked"), ""), ok("read_file", path("log.md"), "- checked"),
			ok("append_to_file", appendText("./log.md", "- checked "), ""),
		}, want: Undo, at: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			if cfg == (Config{}) {
				cfg = defaults
			}
			at, v := firstCatch(cfg, tt.calls)
			if at != tt.at || v.Kind != tt.want || v.Period != tt.period {
				t.Fatalf("caught at step %d as %q (period %d): %s; want step %d as %q (period %d)", at, v.Kind, v.Period, v, tt.at, tt.want, tt.period)
			}
			if v.Steps[len(v.Steps)-1] != at || len(v.Calls) == 0 {
				t.Errorf("verdict %+v does not end at the caught step %d or names no call", v, at)
			}
			if s := v.String(); !strings.Contains(s, "step") {
				t.Errorf("String() = %q names no steps", s)
			}
		})
	}
}

// TestLookAlikesPass: work that looks repetitive but makes progress is never caught.
func TestLookAlikesPass(t *testing.T) {
	var paging []call
	for i := range 12 {
		paging = append(paging, ok("read_file", lines("big.log", i*100+1, i*100+100), fmt.Sprintf("lines %d", i)))
	}
	var explore []call
	for i := range 12 {
		explore = append(explore, ok("read_file", path(fmt.Sprintf("src/f%d.go", i)), fmt.Sprintf("package f%d", i)))
	}
	test := func(out string) call { return bad("execute_shell", shell("go test ./..."), "exit status 1\n"+out) }
	tests := []struct {
		name  string
		calls []call
	}{
		{name: "build_test_fix", calls: []call{
			test("x_test.go:9: got 1"), ok("write_file", write("x.go", "v1"), ""),
			test("x_test.go:9: got 2"), ok("write_file", write("x.go", "v2"), ""),
			test("x_test.go:12: got 3"), ok("write_file", write("x.go", "v3"), ""),
			ok("execute_shell", shell("go test ./..."), "ok"), ok("finish", `{"reason":"tests pass"}`, ""),
		}},
		{name: "build_test_fix_same_failure", calls: []call{
			test("FAIL"), ok("write_file", write("x.go", "v1"), ""), test("FAIL"), ok("write_file", write("x.go", "v2"), ""),
			test("FAIL"), ok("write_file", write("x.go", "v3"), ""), test("FAIL"), ok("write_file", write("x.go", "v4"), ""),
			ok("execute_shell", shell("go test ./..."), "ok"),
		}},
		{name: "paging_through_a_file", calls: paging},
		{name: "reading_new_files", calls: explore},
		{name: "polling_with_backoff_that_ends", calls: []call{
			ok("execute_shell", shell("curl -s localhost:8080/job"), "pending"), ok("execute_shell", shell("sleep 1"), ""),
			ok("execute_shell", shell("curl -s localhost:8080/job"), "pending"), ok("execute_shell", shell("sleep 2"), ""),
			ok("execute_shell", shell("curl -s localhost:8080/job"), "pending"), ok("execute_shell", shell("sleep 4"), ""),
			ok("execute_shell", shell("curl -s localhost:8080/job"), "pending"), ok("execute_shell", shell("sleep 8"), ""),
			ok("execute_shell", shell("curl -s localhost:8080/job"), "done"),
			ok("write_file", write("report.md", "job done"), ""), ok("finish", `{"reason":"done"}`, ""),
		}},
		{name: "list_after_each_write", calls: []call{
			ok("list_folder", path("."), ""), ok("write_file", write("a", "1"), ""), ok("list_folder", path("."), "a"),
			ok("write_file", write("b", "1"), ""), ok("list_folder", path("."), "a\nb"), ok("write_file", write("c", "1"), ""),
			ok("list_folder", path("."), "a\nb\nc"),
		}},
		{name: "revert_once", calls: []call{
			ok("write_file", write("x.go", "B"), ""), test("FAIL"), ok("write_file", write("x.go", "A"), ""), test("FAIL"),
			ok("write_file", write("x.go", "C"), ""), ok("execute_shell", shell("go test ./..."), "ok"),
		}},
		{name: "append_log_lines", calls: []call{
			ok("append_to_file", appendText("log.md", "- one"), ""), ok("append_to_file", appendText("log.md", "- two"), ""),
			ok("append_to_file", appendText("log.md", "- three"), ""),
		}},
		{name: "ask_user_twice", calls: []call{
			ok("ask_user", `{"question":"which?"}`, "blue"), ok("ask_user", `{"question":"which?"}`, "red"), ok("ask_user", `{"question":"which?"}`, "red"),
		}},
		{name: "different_programs_failing", calls: []call{
			bad("execute_shell", shell("go vet ./..."), "exit status 1\nvet: x.go:3: unreachable code"),
			bad("execute_shell", shell("staticcheck ./..."), "exit status 1\nx.go:3:2: this value of err is never used (SA4006)"),
			bad("execute_shell", shell("make lint"), "exit status 2\nmake: golangci-lint: Command not found"),
			bad("execute_shell", shell("gofmt -l ."), "exit status 1\nx.go"),
		}},
		{name: "two_failures_then_another_command", calls: []call{
			missingCall(1), missingCall(2), missingCall(3), ok("list_folder", path("."), "a"), missingCall(4), missingCall(5),
		}},
		{name: "read_write_read", calls: []call{
			ok("read_file", path("a"), "1"), ok("write_file", write("a", "2"), ""), ok("read_file", path("a"), "2"),
			ok("write_file", write("a", "3"), ""), ok("read_file", path("a"), "3"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if at, v := firstCatch(defaults, tt.calls); at != 0 {
				t.Fatalf("false alarm at step %d: %s (%s)", at, v.Kind, v)
			}
		})
	}
}

func missingCall(i int) call {
	return bad("read_file", path(fmt.Sprintf("m%d", i)), "no such file or directory")
}

func TestErrorClass(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{name: "missing_file", text: "Error: read_file: open a/b.txt: no such file or directory", want: "not_found"},
		{name: "permission", text: "Error: open x: permission denied", want: "not_allowed"},
		{name: "timeout", text: "Error: command timed out after 30s", want: "timeout"},
		{name: "names_blanked", text: `Error: exit status 2: make: *** No rule for "a"` + "\nmore", want: "exit status 0: make: *** no rule for _ | more"},
		{name: "program_output_counts", text: "Error: exit status 1\nx_test.go:9: got 2, want 3\nFAIL", want: "exit status 0 | _ got 0, want 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ErrorClass(tt.text); got != tt.want {
				t.Errorf("ErrorClass(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestVerdictString(t *testing.T) {
	v := Verdict{Kind: Cycle, Period: 2, Steps: []int{3, 4, 5, 6}, Calls: []string{"list_folder .", "read_file notes.txt"}}
	want := "a cycle of 2 steps seen twice (steps 3-6: list_folder ., read_file notes.txt)"
	if got := v.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	v = Verdict{Kind: Undo, Steps: []int{2, 5}, Calls: []string{"append_to_file log.md"}, Detail: "the same text appended to log.md again"}
	if got := v.String(); got != "the same text appended to log.md again (steps 2, 5: append_to_file log.md)" {
		t.Errorf("String() = %q", got)
	}
}

// BenchmarkCheck is the watchdog's cost per proposal with a full window behind it.
func BenchmarkCheck(b *testing.B) {
	cfg := defaults
	var h []Step
	for i := range cfg.Window() {
		h = append(h, Observe(i+1, "read_file", json.RawMessage(lines("big.log", i*100+1, i*100+100)), commands.ClassRead, Succeeded, fmt.Sprint("page ", i)))
	}
	next := Observe(len(h)+1, "write_file", json.RawMessage(write("out.md", "summary")), commands.ClassWriteWorkspace, "", "")
	for b.Loop() {
		if Check(cfg, h, next).Caught() {
			b.Fatal("caught")
		}
	}
}
