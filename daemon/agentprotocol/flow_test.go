package agentprotocol_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/daemon/agentprotocol"
)

// TestClientFlow drives a task from creation to its end the way an Agent Protocol client
// does, against the real daemon: every request and response checked against the spec.
func TestClientFlow(t *testing.T) {
	c, m := startDaemon(t)
	m.Script(
		proposal("write_file", map[string]string{"path": "notes/hello.txt", "contents": "hello, world"}),
		proposal("list_folder", map[string]string{"path": "."}),
		proposal("finish", map[string]string{"reason": "the note is written"}),
	)

	// Create: a new agent, its run started.
	r := c.json("POST", "/ap/v1/agent/tasks", map[string]any{"input": "write a hello note"})
	if r.status != 200 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var task agentprotocol.Task
	r.decode(t, &task)
	if !strings.HasPrefix(task.TaskID, "r-") || task.Input != "write a hello note" || len(task.Artifacts) != 0 {
		t.Fatalf("created task = %+v", task)
	}
	tasks := "/ap/v1/agent/tasks/" + task.TaskID

	// The first step only shows the proposal: nothing is approved unseen.
	var s0 agentprotocol.Step
	if r = c.json("POST", tasks+"/steps", map[string]any{}); r.status != 200 {
		t.Fatalf("step 0: %d %s", r.status, r.body)
	}
	r.decode(t, &s0)
	if s0.Name != "write_file" || s0.Status != agentprotocol.StatusCreated || !strings.Contains(s0.Output, "awaiting a decision") {
		t.Fatalf("first step = %+v, want write_file awaiting a decision", s0)
	}
	if r = c.json("GET", tasks+"/artifacts", nil); strings.Contains(string(r.body), "hello.txt") {
		t.Fatalf("write_file ran before it was approved: %s", r.body)
	}

	// Step 1, empty input: approves write_file; the reply shows it ran and what is next.
	var s1 agentprotocol.Step
	if r = c.json("POST", tasks+"/steps", map[string]any{}); r.status != 200 {
		t.Fatalf("step 1: %d %s", r.status, r.body)
	}
	r.decode(t, &s1)
	if s1.StepID != s0.StepID || s1.Name != "write_file" || s1.Status != agentprotocol.StatusCompleted || s1.IsLast || s1.Input != "" {
		t.Errorf("step 1 = %+v", s1)
	}
	if !strings.Contains(s1.Output, "Ran write_file") || !strings.Contains(s1.Output, "Next: I will list_folder") {
		t.Errorf("step 1 output does not say what ran and what is next:\n%s", s1.Output)
	}
	if len(s1.Artifacts) != 1 || s1.Artifacts[0].FileName != "hello.txt" || s1.Artifacts[0].RelativePath != "notes" || !s1.Artifacts[0].AgentCreated {
		t.Errorf("step 1 artifacts = %+v, want notes/hello.txt", s1.Artifacts)
	}

	// The steps so far: the one done, and the one the agent proposes now.
	var steps agentprotocol.StepListResponse
	c.json("GET", tasks+"/steps", nil).decode(t, &steps)
	if len(steps.Steps) != 2 || steps.Steps[0].StepID != s1.StepID || steps.Steps[1].Name != "list_folder" ||
		steps.Steps[1].Status != agentprotocol.StatusCreated || steps.Pagination.TotalItems != 2 {
		t.Fatalf("steps = %+v", steps)
	}
	var one agentprotocol.Step
	c.json("GET", tasks+"/steps/"+s1.StepID, nil).decode(t, &one)
	if one.StepID != s1.StepID || one.Output != s1.Output {
		t.Errorf("GET step = %+v, want %+v", one, s1)
	}

	// The file the agent wrote is an artifact, and downloads as written.
	var arts agentprotocol.ArtifactListResponse
	c.json("GET", tasks+"/artifacts", nil).decode(t, &arts)
	if len(arts.Artifacts) != 1 || arts.Artifacts[0].ArtifactID != s1.Artifacts[0].ArtifactID {
		t.Fatalf("artifacts = %+v", arts)
	}
	if r = c.json("GET", tasks+"/artifacts/"+arts.Artifacts[0].ArtifactID, nil); r.status != 200 || string(r.body) != "hello, world" {
		t.Errorf("download: %d %q", r.status, r.body)
	}

	// An upload lands in the workspace, is listed as not agent-made, and downloads back.
	var up agentprotocol.Artifact
	if r = c.upload(task.TaskID, "inbox", "data.csv", "a,b\n1,2\n"); r.status != 200 {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	r.decode(t, &up)
	if up.AgentCreated || up.FileName != "data.csv" || up.RelativePath != "inbox" {
		t.Errorf("uploaded = %+v", up)
	}
	if r = c.json("GET", tasks+"/artifacts/"+up.ArtifactID, nil); string(r.body) != "a,b\n1,2\n" {
		t.Errorf("uploaded file downloads as %q", r.body)
	}
	c.json("GET", tasks+"/artifacts?page_size=1&current_page=1", nil).decode(t, &arts)
	if len(arts.Artifacts) != 1 || arts.Artifacts[0].FileName != "data.csv" || arts.Pagination.TotalItems != 2 || arts.Pagination.TotalPages != 2 {
		t.Errorf("artifacts page 1 of 2 = %+v", arts)
	}

	// Step 2 with input: feedback, so list_folder does not run and the agent moves on.
	var s2 agentprotocol.Step
	c.json("POST", tasks+"/steps", map[string]any{"input": "no need to look; finish now"}).decode(t, &s2)
	if s2.StepID != steps.Steps[1].StepID || s2.Input != "no need to look; finish now" || !strings.Contains(s2.Output, "Not run") ||
		!strings.Contains(s2.Output, "Next: I will finish") || s2.IsLast {
		t.Errorf("step 2 = %+v", s2)
	}

	// Step 3 approves finish: the last step; the task has ended.
	var s3 agentprotocol.Step
	c.json("POST", tasks+"/steps", nil).decode(t, &s3)
	if s3.Name != "finish" || !s3.IsLast || s3.Status != agentprotocol.StatusCompleted || !strings.Contains(s3.Output, "the note is written") {
		t.Errorf("step 3 = %+v", s3)
	}
	c.json("GET", tasks, nil).decode(t, &task)
	if task.AdditionalInput["outcome"] != "finished" || len(task.Artifacts) != 2 {
		t.Errorf("finished task = %+v", task)
	}
	if r = c.json("POST", tasks+"/steps", map[string]any{}); r.status != 409 || !strings.Contains(r.errorText(t), "has ended") {
		t.Errorf("a step after the end: %d %s", r.status, r.body)
	}

	var list agentprotocol.TaskListResponse
	c.json("GET", "/ap/v1/agent/tasks", nil).decode(t, &list)
	if len(list.Tasks) != 1 || list.Tasks[0].TaskID != task.TaskID || list.Pagination.TotalItems != 1 || list.Pagination.CurrentPage != 1 || list.Pagination.PageSize != 10 {
		t.Errorf("tasks = %+v", list)
	}
}

// TestAskUserStep answers the agent's question through a step's input.
func TestAskUserStep(t *testing.T) {
	c, m := startDaemon(t)
	m.Script(proposal("ask_user", map[string]string{"question": "which colour?"}))
	var task agentprotocol.Task
	c.json("POST", "/ap/v1/agent/tasks", map[string]any{"input": "paint", "additional_input": map[string]any{"name": "painter"}}).decode(t, &task)
	if task.AdditionalInput["agent"] != "painter" {
		t.Errorf("additional_input.name was not the agent's name: %+v", task)
	}
	tasks := "/ap/v1/agent/tasks/" + task.TaskID
	r := c.json("POST", tasks+"/steps", map[string]any{})
	if r.status != 422 || !strings.Contains(r.errorText(t), "which colour?") {
		t.Errorf("an empty answer: %d %s", r.status, r.body)
	}
	var s agentprotocol.Step
	c.json("POST", tasks+"/steps", map[string]any{"input": "blue"}).decode(t, &s)
	if s.Name != "ask_user" || s.Input != "blue" || s.Status != agentprotocol.StatusCompleted {
		t.Errorf("answered step = %+v", s)
	}
	// Deny the next proposal (finish): the run stops.
	c.json("POST", tasks+"/steps", map[string]any{"additional_input": map[string]any{"decision": "deny"}}).decode(t, &s)
	if s.Name != "finish" || !s.IsLast || !strings.Contains(s.Output, "denied") {
		t.Errorf("denied step = %+v", s)
	}
}

// TestBadRequests: every mistake gets the right status and a JSON error naming it.
func TestBadRequests(t *testing.T) {
	c, _ := startDaemon(t)
	var task agentprotocol.Task
	c.json("POST", "/ap/v1/agent/tasks", map[string]any{"input": "wait"}).decode(t, &task)
	tasks := "/ap/v1/agent/tasks/" + task.TaskID
	outside := base64.RawURLEncoding.EncodeToString([]byte("../../agentd.db"))
	hidden := base64.RawURLEncoding.EncodeToString([]byte(".agentprotocol-uploads.json"))

	tests := []struct {
		name, method, path, body string
		valid                    bool // the request fits the spec
		status                   int
		want                     string
	}{
		{"truncated_json", "POST", "/ap/v1/agent/tasks", `{"input": "x"`, false, 400, "unexpected end"},
		{"syntax_error", "POST", "/ap/v1/agent/tasks", `{"input": x}`, false, 400, "invalid character"},
		{"input_not_a_string", "POST", "/ap/v1/agent/tasks", `{"input": 5}`, false, 400, `"input"`},
		{"not_an_object", "POST", "/ap/v1/agent/tasks", `["x"]`, false, 400, "JSON object"},
		{"empty_input", "POST", "/ap/v1/agent/tasks", `{"input": "  "}`, true, 422, "input is empty"},
		{"bad_policy", "POST", "/ap/v1/agent/tasks", `{"input": "x", "additional_input": {"policy": "yolo"}}`, true, 422, "yolo"},
		{"bad_decision", "POST", tasks + "/steps", `{"additional_input": {"decision": "maybe"}}`, true, 422, "maybe"},
		{"step_bad_json", "POST", tasks + "/steps", `{"input": }`, false, 400, "invalid character"},
		{"stale_step_id", "POST", tasks + "/steps", `{"additional_input": {"step_id": "p-000000000000"}}`, true, 409, "not the pending step"},
		{"unknown_task", "GET", "/ap/v1/agent/tasks/r-000000000000", ``, true, 404, "r-000000000000"},
		{"agent_name_is_not_a_task", "GET", "/ap/v1/agent/tasks/note-writer", ``, true, 404, "note-writer"},
		{"unknown_task_steps", "POST", "/ap/v1/agent/tasks/r-000000000000/steps", `{}`, true, 404, "r-000000000000"},
		{"unknown_step", "GET", tasks + "/steps/p-000000000000", ``, true, 404, "p-000000000000"},
		{"unknown_artifact", "GET", tasks + "/artifacts/bm9wZQ", ``, true, 404, "bm9wZQ"},
		{"artifact_outside_workspace", "GET", tasks + "/artifacts/" + outside, ``, true, 404, "no artifact"},
		{"hidden_artifact", "GET", tasks + "/artifacts/" + hidden, ``, true, 404, "no artifact"},
		{"page_size_zero", "GET", "/ap/v1/agent/tasks?page_size=0", ``, false, 400, "page_size"},
		{"page_not_a_number", "GET", tasks + "/steps?current_page=two", ``, false, 400, "current_page"},
		{"page_size_too_big", "GET", tasks + "/artifacts?page_size=1000", ``, true, 400, "at most 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.do(tt.method, tt.path, "application/json", []byte(tt.body), tt.valid)
			if r.status != tt.status {
				t.Errorf("status %d, want %d; body %s", r.status, tt.status, r.body)
			}
			if msg := r.errorText(t); !strings.Contains(msg, tt.want) {
				t.Errorf("error %q does not mention %q", msg, tt.want)
			}
		})
	}

	t.Run("upload_escaping_the_workspace", func(t *testing.T) {
		r := c.upload(task.TaskID, "../../etc", "x.txt", "x")
		if r.status != 400 || !strings.Contains(r.errorText(t), "relative_path") {
			t.Errorf("status %d %s", r.status, r.body)
		}
	})
	t.Run("upload_hidden_name", func(t *testing.T) {
		r := c.upload(task.TaskID, "", ".bashrc", "x")
		if r.status != 400 || !strings.Contains(r.errorText(t), ".bashrc") {
			t.Errorf("status %d %s", r.status, r.body)
		}
	})
	for _, tok := range []string{"", "wrong-token-0123456789"} {
		name := map[string]string{"": "no_token", "wrong-token-0123456789": "wrong_token"}[tok]
		t.Run(name, func(t *testing.T) {
			anon := *c
			anon.token = tok
			r := anon.json("GET", "/ap/v1/agent/tasks", nil)
			if r.status != 401 || r.header.Get("WWW-Authenticate") == "" {
				t.Errorf("status %d (WWW-Authenticate %q), want 401", r.status, r.header.Get("WWW-Authenticate"))
			}
		})
	}
}

// TestArtifactDownloadOfSpecialFiles checks that a file the agent's shell planted under
// an artifact's name cannot hang or misuse a download: a FIFO (whose open would wait for
// a writer forever) and a file with another name elsewhere (a hard link) are not served.
func TestArtifactDownloadOfSpecialFiles(t *testing.T) {
	c, _ := startDaemon(t)
	var task agentprotocol.Task
	c.json("POST", "/ap/v1/agent/tasks", map[string]any{"input": "wait"}).decode(t, &task)
	tasks := "/ap/v1/agent/tasks/" + task.TaskID
	wss, _ := filepath.Glob(filepath.Join(c.state, "workspaces", "*"))
	if len(wss) != 1 {
		t.Fatalf("workspaces %v; want the task's one", wss)
	}
	ws := wss[0]
	if err := syscall.Mkfifo(filepath.Join(ws, "pipe.txt"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other")
	os.WriteFile(other, []byte("another name's content"), 0o600)
	if err := os.Link(other, filepath.Join(ws, "linked.txt")); err != nil {
		t.Fatal(err)
	}
	// The record of uploads, where the agent can put a FIFO too: listing must not wait on it.
	if err := syscall.Mkfifo(filepath.Join(ws, ".agentprotocol-uploads.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("uploads_record_fifo", func(t *testing.T) {
		done := make(chan response, 1)
		go func() { done <- c.json("GET", tasks+"/artifacts", nil) }()
		select {
		case r := <-done:
			if r.status != 200 {
				t.Errorf("listing: status %d %q; want 200", r.status, r.body)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("listing the artifacts hangs")
		}
	})
	tests := []struct{ name, file string }{
		{name: "fifo", file: "pipe.txt"},
		{name: "hard_link", file: "linked.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan response, 1)
			go func() {
				done <- c.json("GET", tasks+"/artifacts/"+base64.RawURLEncoding.EncodeToString([]byte(tt.file)), nil)
			}()
			select {
			case r := <-done:
				if r.status != 404 {
					t.Errorf("download of %s: status %d %q; want 404", tt.file, r.status, r.body)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("download of %s hangs", tt.file)
			}
		})
	}
}

// TestArtifactListingOfDeepTree checks that listing a task's artifacts costs the daemon
// little however deep the agent's shell nested folders: the walk resolves each path from
// the workspace's top, so a chain 2000 folders deep would cost it half a minute a request.
func TestArtifactListingOfDeepTree(t *testing.T) {
	c, _ := startDaemon(t)
	var task agentprotocol.Task
	c.json("POST", "/ap/v1/agent/tasks", map[string]any{"input": "wait"}).decode(t, &task)
	wss, _ := filepath.Glob(filepath.Join(c.state, "workspaces", "*"))
	if len(wss) != 1 {
		t.Fatalf("workspaces %v; want the task's one", wss)
	}
	os.MkdirAll(filepath.Join(wss[0], "out"), 0o755)
	os.WriteFile(filepath.Join(wss[0], "out", "report.txt"), []byte("r"), 0o644)
	fd, err := unix.Open(wss[0], unix.O_DIRECTORY|unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2000; i++ {
		unix.Mkdirat(fd, "d", 0o755)
		next, err := unix.Openat(fd, "d", unix.O_DIRECTORY|unix.O_RDONLY, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	unix.Close(fd)
	start := time.Now()
	var arts agentprotocol.ArtifactListResponse
	c.json("GET", "/ap/v1/agent/tasks/"+task.TaskID+"/artifacts", nil).decode(t, &arts)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("listing took %v", took)
	}
	if len(arts.Artifacts) != 1 || arts.Artifacts[0].FileName != "report.txt" {
		t.Errorf("artifacts = %+v; want out/report.txt", arts.Artifacts)
	}
}
