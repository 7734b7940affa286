package watchdog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/netguard"
)

// Outcomes of a step, as episodes record them.
const (
	Succeeded = "succeeded"
	Failed    = "failed"
	Feedback  = "feedback" // not run: a person's or the policy's feedback went to the model
	Denied    = "denied"
)

// Step is one step of a run as the watchdog sees it; Observe builds it.
type Step struct {
	N       int    // the step's number in its run
	Command string // the command's name
	// Args are the arguments normalised: what does not change their meaning is gone.
	Args  string
	Class commands.Class
	// Outcome is how the step ended ("" for the proposal under check).
	Outcome string
	// Result is what it gave: a digest of the output, the class of a failure's error
	// ("error:not_found"), or a digest of the feedback.
	Result string
	// Label is the call as a person reads it: "read_file notes.txt".
	Label string
	file  fileChange
}

// fileChange is what a built-in file command does to its file.
type fileChange struct {
	path string
	op   byte   // 'w' write_file, 'd' delete_file, 'a' append_to_file
	data string // a digest of the text written or appended
}

// state is the file's content after the change: "" when unknown (after an append).
func (f fileChange) state() string {
	switch f.op {
	case 'w':
		return f.data
	case 'd':
		return "absent"
	}
	return ""
}

func (s Step) key() string  { return s.Command + "\x00" + s.Args }
func (s Step) full() string { return s.key() + "\x00" + s.Outcome + "\x00" + s.Result }

// Observe builds step n from a call (args as proposed), the class of its command ("" when
// the agent no longer has it) and, once it ran, its outcome and result as episodes store
// them: the output, "Error: ..." for a failure, the feedback text for feedback. For the
// proposal under check, outcome and result are "".
func Observe(n int, command string, args json.RawMessage, class commands.Class, outcome, result string) Step {
	m := normalMap(args)
	s := Step{N: n, Command: command, Class: class, Outcome: outcome, Args: encode(m, args)}
	switch outcome {
	case Failed:
		s.Result = "error:" + ErrorClass(result)
	case "":
	default:
		s.Result = digest(result)
	}
	s.Label = label(command, m)
	switch command {
	case "write_file":
		s.file = fileChange{path: str(m, "path"), op: 'w', data: digest(str(m, "contents"))}
	case "append_to_file":
		s.file = fileChange{path: str(m, "path"), op: 'a', data: digest(str(m, "text"))}
	case "delete_file":
		s.file = fileChange{path: str(m, "path"), op: 'd'}
	}
	return s
}

// pathKeys are the argument names that hold a workspace path.
var pathKeys = map[string]bool{"path": true, "file": true, "folder": true, "dir": true, "directory": true}

// normalMap decodes args and normalises every string in them: whitespace trimmed, a
// workspace path cleaned the way the file commands clean it (commands.CleanPath), a URL
// read the way the network guard reads it (netguard.SameURL: no tracking parameters).
// nil when args are no JSON object.
func normalMap(args json.RawMessage) map[string]any {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return nil
	}
	for k, v := range m {
		m[k] = normalValue(k, v)
	}
	return m
}

func normalValue(key string, v any) any {
	switch x := v.(type) {
	case string:
		x = strings.TrimSpace(x)
		if pathKeys[key] {
			if p, err := commands.CleanPath(x); err == nil {
				return p
			}
		}
		if u, ok := netguard.SameURL(x); ok {
			return u
		}
		return x
	case []any:
		for i := range x {
			x[i] = normalValue(key, x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = normalValue(k, x[k])
		}
	}
	return v
}

// encode writes m with its keys in order (commands.CanonicalArgs); raw as it is when m is nil.
func encode(m map[string]any, raw json.RawMessage) string {
	if m == nil {
		return strings.TrimSpace(string(raw))
	}
	b, err := json.Marshal(m)
	if err == nil {
		b, err = commands.CanonicalArgs(b)
	}
	if err != nil {
		return strings.TrimSpace(string(raw))
	}
	return string(b)
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// label is the call as a person reads it: the command and its path, URL or first text.
func label(command string, m map[string]any) string {
	subject := str(m, "path")
	if subject == "" {
		subject = str(m, "url")
	}
	if subject == "" {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if subject = str(m, k); subject != "" {
				break
			}
		}
	}
	subject = strings.Join(strings.Fields(subject), " ")
	if utf8.RuneCountInString(subject) > 48 {
		subject = string([]rune(subject)[:47]) + "…"
	}
	if subject == "" {
		return command
	}
	return command + " " + subject
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(strings.TrimSpace(s)))
	return hex.EncodeToString(sum[:8])
}

// errorClasses map what an error says to its class; the first match wins.
var errorClasses = []struct{ class, words string }{
	{"not_found", "no such file|not found|does not exist|cannot find|unknown file"},
	{"not_allowed", "permission denied|not allowed|refused|leaves the workspace|outside the workspace|forbidden"},
	{"timeout", "timed out|timeout|deadline exceeded"},
	{"is_a_directory", "is a directory|not a file"},
	{"not_a_directory", "not a directory|not a folder"},
	{"too_large", "too large|too long|too big"},
	{"unavailable", "connection refused|no such host|unreachable|unavailable"},
}

var (
	quoted  = regexp.MustCompile("\"[^\"]*\"|'[^']*'|`[^`]*`")
	pathish = regexp.MustCompile(`\S*[/\\.]\S*`)
	digits  = regexp.MustCompile(`[0-9]+`)
)

// ErrorClass is the class of a failure's error text ("Error: ..." as episodes store it):
// a known kind (not_found, not_allowed, timeout...), else its first two lines (a shell's
// "exit status 1" and the first line of what the program said) with the names, paths and
// numbers in them blanked, so reading three different missing files fails the same way
// and three different programs failing do not.
func ErrorClass(text string) string {
	lines := strings.SplitN(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), "Error: ")), "\n", 3)
	head := strings.ToLower(strings.Join(lines[:min(2, len(lines))], " | "))
	for _, c := range errorClasses {
		for _, w := range strings.Split(c.words, "|") {
			if strings.Contains(head, w) {
				return c.class
			}
		}
	}
	head = quoted.ReplaceAllString(head, "_")
	head = pathish.ReplaceAllString(head, "_")
	head = digits.ReplaceAllString(head, "0")
	head = strings.Join(strings.Fields(head), " ")
	if len(head) > 120 {
		head = head[:120]
	}
	return head
}

// progress reports whether step s, with before the steps before it, changed something
// or learned something new: a file changed, a write or shell command not done before, a
// person's answer, new feedback, or output the command has not given before (reading
// the same content, listing the same folder, polling the same status learn nothing).
func (s Step) progress(before []Step) bool {
	switch s.Outcome {
	case Failed, Denied:
		return false
	case Feedback:
		return !seen(before, s, false)
	}
	if s.Command == commands.AskUser || s.changes(before) {
		return true
	}
	if s.file.path == "" && (s.Class == commands.ClassWriteWorkspace || s.Class == commands.ClassExecute) {
		return false // changes said it was done before
	}
	return !seen(before, s, false)
}

// changes reports whether s, run after the steps before, changes something: a file to
// other content than it last had, any append, any other write or shell command not done
// before (what a shell line changes is not known: a new one counts as a change).
func (s Step) changes(before []Step) bool {
	if s.file.path != "" {
		return s.file.op == 'a' || lastState(before, s.file.path) != s.file.state()
	}
	if s.Class == commands.ClassWriteWorkspace || s.Class == commands.ClassExecute {
		return !seen(before, s, true)
	}
	return false
}

// seen reports whether one of steps gave what s gave: the same command and outcome with
// the same result, or (sameCall) the same call that succeeded.
func seen(steps []Step, s Step, sameCall bool) bool {
	for _, b := range steps {
		switch {
		case sameCall && b.Outcome == Succeeded && b.key() == s.key():
			return true
		case !sameCall && b.Command == s.Command && b.Outcome == s.Outcome && b.Result == s.Result:
			return true
		}
	}
	return false
}

// lastState is the content path had after the latest successful change among steps ("":
// unknown).
func lastState(steps []Step, path string) string {
	for i := len(steps) - 1; i >= 0; i-- {
		if s := steps[i]; s.Outcome == Succeeded && s.file.path == path {
			return s.file.state()
		}
	}
	return ""
}

// undo finds next putting a file back a second time (written, then restored or deleted,
// then changed back again) or appending to a file the same text its last change appended.
func undo(h []Step, next Step) Verdict {
	f := next.file
	if f.path == "" {
		return Verdict{}
	}
	w := h[max(0, len(h)-undoWindow):]
	if f.op == 'a' {
		for i := len(w) - 1; i >= 0; i-- {
			s := w[i]
			if s.file.path != f.path || s.Outcome != Succeeded {
				continue
			}
			if s.file == f {
				return involve(Verdict{Kind: Undo, Detail: "the same text appended to " + f.path + " again"}, []Step{s}, next, 1)
			}
			break
		}
		return Verdict{}
	}
	var seq []Step // the file's writes and deletes; an append makes its content unknown
	for _, s := range w {
		switch {
		case s.Outcome != Succeeded || s.file.path != f.path:
		case s.file.op == 'a':
			seq = nil
		default:
			seq = append(seq, s)
		}
	}
	seq = append(seq, next)
	back := 0
	for i := 1; i < len(seq); i++ {
		st := seq[i].file.state()
		if st == seq[i-1].file.state() {
			continue // no change
		}
		for j := 0; j < i-1; j++ {
			if seq[j].file.state() == st {
				back++
				break
			}
		}
	}
	if back < 2 {
		return Verdict{}
	}
	v := involve(Verdict{Kind: Undo, Detail: f.path + " changed and put back again"}, seq[:len(seq)-1], next, 0)
	v.Calls = distinctLabels(seq, 4)
	return v
}
