package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/daemon/testutil"
)

// TestCheckConfigGolden runs `agentd --check-config --config testdata/NAME.toml` for each
// file and compares the exit code and output with testdata/NAME.golden.
func TestCheckConfigGolden(t *testing.T) {
	for _, k := range []string{"OLLAMA_HOST", "AGENTD_SOCKET", "RUNTIME_DIRECTORY", "STATE_DIRECTORY"} {
		t.Setenv(k, "")
	}
	files, err := filepath.Glob("testdata/check_*.toml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no configs: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".toml")
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"--check-config", "--config", file}, &stdout, &stderr, nil)
			got := fmt.Sprintf("[exit %d]\n--- stdout\n%s--- stderr\n%s", code, stdout.String(), stderr.String())
			testutil.Golden(t, filepath.Join("testdata", name+".golden"), []byte(got))
		})
	}
}
