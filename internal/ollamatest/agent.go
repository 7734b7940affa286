package ollamatest

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	ollama "github.com/ollama/ollama/api"
)

// Agent is the scripted model of an agent-loop test: it answers a profile request on its
// own, a history summary with one line per step (so neither eats a scripted step), each
// step with the next scripted reply, and finish when the script is empty. Hand its Chat
// to Fake.OnChat. The zero value is ready; it is safe for concurrent use.
type Agent struct {
	// Name is the name of every profile it makes; "" numbers them helper-1, helper-2…
	Name string
	// Finish is the reply when the script is empty; "" is finish with reason "all done".
	Finish string

	mu      sync.Mutex
	replies []string
	names   int
}

// Script queues the model's next step replies.
func (a *Agent) Script(replies ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.replies = append(a.replies, replies...)
}

// Chat answers one model call: profile, summary, or the next step.
func (a *Agent) Chat(req *ollama.ChatRequest) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	system := ""
	if len(req.Messages) > 0 {
		system = req.Messages[0].Content
	}
	switch {
	case strings.HasPrefix(system, "You create autonomous agents"):
		name := a.Name
		if name == "" {
			a.names++
			name = fmt.Sprintf("helper-%d", a.names)
		}
		b, _ := json.Marshal(map[string]any{"name": name, "description": "a helper",
			"best_practices": []string{"be brief"}, "constraints": []string{"stay local"}})
		return string(b), nil
	case len(req.Messages) > 1 && strings.HasPrefix(system, "You keep the log of an autonomous agent short"):
		var lines []string
		for l := range strings.SplitSeq(req.Messages[1].Content, "\n") {
			if n, _, ok := strings.Cut(l, ". "); ok && n != "" && strings.Trim(n, "0123456789") == "" {
				lines = append(lines, "did step "+n)
			}
		}
		b, _ := json.Marshal(map[string][]string{"lines": lines})
		return string(b), nil
	case len(a.replies) == 0 && a.Finish != "":
		return a.Finish, nil
	case len(a.replies) == 0:
		return Reply("finish", map[string]string{"reason": "all done"}), nil
	}
	r := a.replies[0]
	a.replies = a.replies[1:]
	return r, nil
}
