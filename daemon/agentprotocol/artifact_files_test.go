package agentprotocol_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/daemon/agentprotocol"
	"golang.org/x/sys/unix"
)

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
