package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/display"
)

// Memory is an agent's long-term memory as the memory commands reach it. The daemon
// provides it (SQLite first, then the Bleve index); Env.Memory is nil where there is none.
type Memory interface {
	// Save stores a note for the agent and returns its id.
	Save(ctx context.Context, agentID, text string) (string, error)
	// Recall returns up to k of the agent's (and shared) memories most relevant to query.
	Recall(ctx context.Context, agentID, query string, k int) ([]Recalled, error)
}

// Recalled is one memory found by Recall.
type Recalled struct {
	Kind    string
	Source  string
	Text    string
	Score   float64
	Created time.Time
}

// ErrNoMemory is what the memory commands fail with when the daemon runs without memory.
var ErrNoMemory = errors.New("long-term memory is disabled in this daemon ([memory] enabled = false)")

// Names of the memory commands.
const (
	MemoryAdd    = "memory_add"
	MemorySearch = "memory_search"
)

type memoryAddArgs struct {
	Text string `json:"text" desc:"the fact to remember, self-contained" max:"1000"`
}

var memoryAddSpec = Spec{
	Name:        MemoryAdd,
	Description: "Save a note to your long-term memory for later steps and tasks",
	Params:      FromStruct(memoryAddArgs{}),
	Class:       ClassWriteWorkspace,
	Idempotent:  true, // the same text is the same note: saving it again replaces it
}

func memoryAdd(ctx context.Context, env Env, a memoryAddArgs) (string, error) {
	if env.Memory == nil {
		return "", ErrNoMemory
	}
	text := strings.TrimSpace(a.Text)
	if text == "" {
		return "", fmt.Errorf("%s: empty text: give the fact to remember", MemoryAdd)
	}
	if _, err := env.Memory.Save(ctx, env.AgentID, text); err != nil {
		return "", err
	}
	return "saved to memory", nil
}

type memorySearchArgs struct {
	Query string `json:"query" desc:"words to look for" max:"200"`
}

var memorySearchSpec = Spec{
	Name:        MemorySearch,
	Description: "Search your long-term memory: past steps, results, feedback, notes, files",
	Params:      FromStruct(memorySearchArgs{}),
	Class:       ClassRead,
	Idempotent:  true,
}

// memorySearchHits is how many memories one memory_search shows.
const memorySearchHits = 5

func memorySearch(ctx context.Context, env Env, a memorySearchArgs) (string, error) {
	if env.Memory == nil {
		return "", ErrNoMemory
	}
	if strings.TrimSpace(a.Query) == "" {
		return "", fmt.Errorf("%s: empty query: give the words to look for", MemorySearch)
	}
	hits, err := env.Memory.Recall(ctx, env.AgentID, a.Query, memorySearchHits)
	if err != nil {
		return "", err
	}
	if len(hits) == 0 {
		return "nothing in memory matches " + fmt.Sprintf("%q", a.Query), nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s for %q, most relevant first:", display.Count(len(hits), "memory", "memories"), a.Query)
	for i, h := range hits {
		fmt.Fprintf(&b, "\n%d. [%s", i+1, h.Kind)
		if h.Source != "" {
			fmt.Fprintf(&b, ", %s", h.Source)
		}
		fmt.Fprintf(&b, "] %s", oneLine(h.Text, 600))
	}
	return b.String(), nil
}

// oneLine flattens s onto one line and cuts it to n bytes on a rune boundary.
func oneLine(s string, n int) string {
	return display.Cut(strings.Join(strings.Fields(s), " "), n, display.Ellipsis)
}

func init() {
	Register(&funcCommand[memoryAddArgs]{memoryAddSpec, memoryAdd})
	Register(&funcCommand[memorySearchArgs]{memorySearchSpec, memorySearch})
}
