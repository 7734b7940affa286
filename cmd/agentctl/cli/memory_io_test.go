package cli_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
)

// writeJSONL writes n records to a file, line bad (1-based; 0 for none) broken.
func writeJSONL(t *testing.T, n, bad int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "big.jsonl")
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(fh)
	for i := 1; i <= n; i++ {
		if i == bad {
			fmt.Fprintf(w, "{\"text\": \"line %d\", \"time\": \"yesterday\"}\n", i)
			continue
		}
		fmt.Fprintf(w, "{\"text\": \"fact %d: %s\", \"speaker\": \"Ann\", \"time\": \"2023-05-08T13:56:00Z\"}\n", i, strings.Repeat("word ", i%40))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	return path
}

// A 100,000-line file streams: it is checked whole, then sent in batches within the
// API's bounds, every record once, each with its own line number.
func TestMemoryImportLargeFile(t *testing.T) {
	f := newEnvDaemon(t)
	const n = 100_000
	path := writeJSONL(t, n, 0)
	res := runCLI(t, "", "memory", "import", "--agent", "researcher", path)
	if res.code != 0 || res.stdout != fmt.Sprintf("imported %d memories from %s\n", n, path) {
		t.Fatalf("import: %s", res)
	}
	next := 1
	for _, b := range f.imported {
		if len(b.Records) > api.MemoryImportBatchMax || b.Agent != "researcher" {
			t.Fatalf("batch of %d records for %q", len(b.Records), b.Agent)
		}
		size := 0
		for i, r := range b.Records {
			size += len(r.Text) + 80
			if b.Lines[i] != next || !strings.HasPrefix(r.Text, fmt.Sprintf("fact %d:", next)) {
				t.Fatalf("record %q on line %d, want line %d next", r.Text, b.Lines[i], next)
			}
			next++
		}
		if size > 1<<20 {
			t.Fatalf("batch of about %d bytes, over the API's 1 MiB body", size)
		}
	}
	if next != n+1 {
		t.Errorf("%d records sent, want %d", next-1, n)
	}
}

// A bad line near the end of a large file stops the import before anything is sent.
func TestMemoryImportBadLineSendsNothing(t *testing.T) {
	f := newEnvDaemon(t)
	path := writeJSONL(t, 20_000, 19_999)
	res := runCLI(t, "", "memory", "import", path)
	want := fmt.Sprintf("%s:19999: field \"time\": \"yesterday\" is not an RFC 3339 time", path)
	if res.code != 1 || !strings.Contains(res.stderr, want) || !strings.Contains(res.stderr, "nothing imported") {
		t.Errorf("import: %s\nwant exit 1 and %q", res, want)
	}
	if len(f.imported) != 0 {
		t.Errorf("%d batches sent before the bad line was found", len(f.imported))
	}
}

func TestMemoryImportLineErrors(t *testing.T) {
	f := newEnvDaemon(t)
	cases := []struct {
		name, line, want string
	}{
		{"tags_not_a_list", `{"text": "x", "tags": "one"}`, `:1: field "tags": a JSON string where a list of strings belongs`},
		{"both_speaker_and_source", `{"text": "x", "speaker": "Ann", "source": "Bob"}`, `:1: field "speaker": the record has both speaker "Ann" and source "Bob": keep one`},
		{"speaker_too_long", `{"text": "x", "speaker": "` + strings.Repeat("a", 1025) + `"}`, `:1: field "speaker": 1025 bytes, over 1024`},
		{"source_too_long", `{"text": "x", "source": "` + strings.Repeat("a", 1025) + `"}`, `:1: field "source": 1025 bytes, over 1024`},
		{"two_objects", `{"text": "x"} {"text": "y"}`, `:1: not one JSON object (more than one JSON value)`},
		{"too_many_tags", `{"text": "x", "tags": [` + strings.Repeat(`"t",`, 16) + `"t"]}`, `:1: field "tags": 17 tags, over 16`},
		{"line_too_long", `{"text": "` + strings.Repeat("x", 70_000) + `"}`, `:1: the line is over 64000 bytes`},
		{"empty_file", ``, `: no records`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "in.jsonl")
			if err := os.WriteFile(path, []byte(c.line+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			res := runCLI(t, "", "memory", "import", path)
			if res.code != 1 || !strings.Contains(res.stderr, path+c.want) {
				t.Errorf("import: %s\nwant %q", res, path+c.want)
			}
		})
	}
	if len(f.imported) != 0 {
		t.Errorf("%d batches sent for bad files", len(f.imported))
	}
}
