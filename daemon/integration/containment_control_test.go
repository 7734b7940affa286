package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/randid"
)

// attackDisplay: what a person is shown of a proposal and of a result is escaped:
// control, bidi and zero-width characters visible, never raw.
func attackDisplay(r *attackRig) {
	r.class = "display"
	const hostile = "invoice\u202etxt.exe\u200b\x1b[2J\x1b]0;pwned\x07"
	var shown string
	show := func(*api.Proposal) {
		shown = r.agentctlOut("show", "shower")
	}
	r.drive(agentRun{name: "shower", plant: func(ws string) []string {
		os.WriteFile(filepath.Join(ws, "evil\x1b[31mname\u202e.txt"), nil, 0o600)
		os.WriteFile(filepath.Join(ws, "two\nlines.txt"), nil, 0o600)
		return nil
	}, steps: []step{
		{name: "display_show_escapes_proposal", command: "write_file", mode: approve, pending: show,
			args: map[string]string{"path": hostile, "contents": "hi \u202e\x1b[31m"},
			check: func(o *outcome) string {
				if !o.proposed {
					return "" // refused as a reply: nobody is shown it
				}
				if w := rawChars(shown); w != "" {
					return "agentctl show prints " + w + " raw"
				}
				low := strings.ToLower(shown)
				if !strings.Contains(low, `\u202e`) || !(strings.Contains(low, `\x1b`) || strings.Contains(low, `\u001b`) || strings.Contains(low, `\e`)) {
					return "agentctl show does not make U+202E and ESC visible"
				}
				return ""
			}},
		{name: "", command: "list_folder", mode: approve, args: map[string]string{"path": "."}},
		{name: "display_show_escapes_thoughts", command: "list_folder", mode: approve, pending: show,
			args: map[string]string{"path": "./."}, speak: "all good \u202e\u2066 \u200b\x1b[8m hidden \x1b[0m\u009b",
			check: func(o *outcome) string {
				if w := rawChars(shown); o.proposed && w != "" {
					return "agentctl show prints " + w + " raw from the model's thoughts"
				}
				return ""
			}},
	}})
	attackDisplayHelper(r, hostile)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"history_results", []string{"history", "shower"}}, {"show_after_results", []string{"show", "shower"}},
		{"audit", []string{"audit", "--agent", "shower"}}, {"ls_helper_task", []string{"ls"}},
		{"show_question", []string{"show", "asker"}}, {"show_helper_list", []string{"show", "lister"}},
		{"show_helper_task", []string{"show", "lister/hx"}}, {"history_helper_list", []string{"history", "lister"}},
	} {
		escape := ""
		if w := rawChars(r.agentctlOut(c.args...)); w != "" {
			escape = "agentctl " + strings.Join(c.args, " ") + " prints " + w + " raw"
		}
		r.record("display_"+c.name+"_escaped", escape)
	}
	escape := ""
	if b, err := os.ReadFile(r.d.logPath); err == nil {
		if w := rawChars(string(b)); w != "" {
			escape = "the daemon's log holds " + w + " raw"
		}
	}
	r.record("display_daemon_log_escapes", escape)
}

// attackDisplayHelper: text the model chooses reaches people in other places too: a
// helper's task (its description in agentctl ls and show) and an ask_user question.
func attackDisplayHelper(r *attackRig, hostile string) {
	r.mu.Lock()
	r.scripts["asker"] = []string{attackReply("ask", "ask_user", map[string]string{"question": "Approve " + hostile + "?"})}
	r.mu.Unlock()
	a := create(r.t, r.c, "asker")
	waitAgent(r.t, r.c, a.ID, "asker's question", 20*time.Second, func(a *api.Agent) bool { return a.Question != nil })
	r.drive(agentRun{name: "lister", helpers: true, steps: []step{
		{command: "start_agent", mode: approve, args: map[string]string{"name": "hx", "task": hostile, "prompt": hostile}},
		{command: "list_agents", mode: approve, args: map[string]string{}},
	}})
}

// rawChars names the first control, bidi or zero-width character in s, or "".
func rawChars(s string) string {
	for _, c := range s {
		switch {
		case c == '\n' || c == '\t':
		case unicode.IsControl(c), unicode.Is(unicode.Bidi_Control, c), c == '\u200b', c == '\u200c', c == '\u200d', c == '\u2060', c == '\ufeff':
			return fmt.Sprintf("%U", c)
		}
	}
	return ""
}

func (r *attackRig) agentctlOut(args ...string) string {
	cmd := exec.Command(r.agentctl, append([]string{"--socket", r.d.socket}, args...)...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "TERM=dumb")
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Logf("agentctl %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// attackControl: the TCP listener's /metrics needs the token and checks Host; a helper's
// workspace never reaches outside through a symlink.
func attackControl(r *attackRig) {
	r.class = "control"
	get := func(host, token string) (int, string) {
		req, _ := http.NewRequest("GET", "http://"+r.httpAddr+"/metrics", nil)
		if host != "" {
			req.Host = host
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("", "")
	escape := ""
	if code == http.StatusOK {
		escape = fmt.Sprintf("/metrics answered without the token (%d bytes; lists agents: %v)", len(body), strings.Contains(body, "filer"))
	}
	r.record("control_metrics_without_token", escape)
	code, _ = get("", "wrong-token-"+randid.Hex(8))
	escape = ""
	if code == http.StatusOK {
		escape = "/metrics answered a wrong token"
	}
	r.record("control_metrics_wrong_token", escape)
	code, _ = get("attacker.example", r.secrets["http_token"])
	escape = ""
	if code == http.StatusOK {
		escape = "the TCP listener answered Host: attacker.example (DNS rebinding)"
	}
	r.record("control_metrics_foreign_host", escape)
	// The tokens never show in what the daemon tells people or logs.
	shown := map[string]string{
		"status": r.agentctlOut("status"), "doctor": r.agentctlOut("doctor"), "metrics": body,
		"api_status": r.apiJSON(func(ctx context.Context) (any, error) { return api.StatusRoute.Do(ctx, r.c, "", api.None{}) }),
		"api_doctor": r.apiJSON(func(ctx context.Context) (any, error) { return api.DoctorRoute.Do(ctx, r.c, "", api.None{}) }),
	}
	if b, err := os.ReadFile(r.d.logPath); err == nil {
		shown["log"] = string(b)
	}
	for _, where := range []string{"status", "doctor", "metrics", "api_status", "api_doctor", "log"} {
		escape := ""
		for _, label := range []string{"slack_token", "discord_token", "http_token"} {
			if strings.Contains(shown[where], r.secrets[label]) {
				escape += "the " + label + " shows in " + where + "; "
			}
		}
		r.record("control_no_token_in_"+where, escape)
	}
	if code, _ := get("", r.secrets["http_token"]); code != http.StatusOK {
		r.t.Errorf("/metrics with the token: status %d, want 200 (the fix must keep metrics usable)", code)
	}
}

// apiJSON is what an API call returns, as JSON, or its error.
func (r *attackRig) apiJSON(call func(context.Context) (any, error)) string {
	v, err := call(context.Background())
	if err != nil {
		return err.Error()
	}
	return jsonString(v)
}

// attackState: the state dir the test made 0755 is 0700 after start, its files 0600.
func attackState(r *attackRig) {
	r.class = "state"
	modes(r, "state", r.d.stateDir)
}

func modes(r *attackRig, prefix, dir string) {
	escape := ""
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		escape = fmt.Sprintf("state dir %s is %v, want 0700", dir, modeOf(fi))
	}
	r.record(prefix+"_dir_0700", escape)
	escape = ""
	if fi, err := os.Stat(filepath.Join(dir, "agentd.db")); err != nil || fi.Mode().Perm()&0o077 != 0 {
		escape = fmt.Sprintf("agentd.db is %v, want 0600", modeOf(fi))
	}
	r.record(prefix+"_db_0600", escape)
	var open []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o077 != 0 {
			open = append(open, fmt.Sprintf("%s %v", p, fi.Mode().Perm()))
		}
		return nil
	})
	r.record(prefix+"_files_private", strings.Join(open, ", "))
}

func modeOf(fi os.FileInfo) any {
	if fi == nil {
		return "missing"
	}
	return fi.Mode().Perm()
}
