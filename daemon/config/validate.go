package config

import (
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Validate checks every value and returns an *Error listing all problems, or nil.
// Command names are not checked here: the daemon knows which commands exist.
func (c *Config) Validate() error {
	if probs := c.problems(); len(probs) > 0 {
		return &Error{Problems: probs}
	}
	return nil
}

// problems returns what is wrong with c's values, in key order, without lines.
func (c *Config) problems() []Problem {
	var probs []Problem
	bad := func(key, format string, args ...any) {
		probs = append(probs, Problem{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	o, a := &c.Ollama, &c.Agent

	if msg := checkURL(o.Host); msg != "" {
		bad("ollama.host", "%s", msg)
	}
	if o.Model == "" {
		bad("ollama.model", "empty; name the model to use, like %q", DefaultModel)
	} else if strings.ContainsAny(o.Model, " \t\n") {
		bad("ollama.model", "%q has spaces; want a model name like %q", o.Model, DefaultModel)
	}
	if strings.ContainsAny(o.SmartModel, " \t\n") {
		bad("ollama.smart_model", "%q has spaces; want a model name like %q", o.SmartModel, "qwen2.5:7b")
	}
	if o.RequestTimeout.Duration <= 0 {
		bad("ollama.request_timeout", "must be more than 0, got %s", o.RequestTimeout)
	}
	if o.MaxContext < minContext {
		bad("ollama.max_context", "must be at least %d tokens, got %d", minContext, o.MaxContext)
	}

	for key, list := range map[string][]string{
		"agent.constraints": a.Constraints, "agent.resources": a.Resources, "agent.best_practices": a.BestPractices,
	} {
		for i, s := range list {
			if strings.TrimSpace(s) == "" {
				bad(key, "item %d is empty", i+1)
			}
		}
	}
	checkCommands(a.Commands, func(msg string) { bad("agent.commands", "%s", msg) })
	for key, n := range map[string]int{
		"agent.max_invalid_replies": a.MaxInvalidReplies, "agent.continuous_limit": a.ContinuousLimit,
		"agent.output_cap": a.OutputCap, "agent.history_episodes": a.HistoryEpisodes,
	} {
		if n < 1 {
			bad(key, "must be at least 1, got %d", n)
		}
	}
	if a.CommandTimeout.Duration <= 0 {
		bad("agent.command_timeout", "must be more than 0, got %s", a.CommandTimeout)
	}
	if a.WorkspaceRoot != "" && !filepath.IsAbs(a.WorkspaceRoot) {
		bad("agent.workspace_root", "%q is not an absolute path", a.WorkspaceRoot)
	}

	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.Log.Level) {
		bad("log.level", "%q is not one of debug, info, warn, error", c.Log.Level)
	}
	if !slices.Contains([]string{"text", "json"}, c.Log.Format) {
		bad("log.format", "%q is not one of text, json", c.Log.Format)
	}
	// By key, so that the map iteration above does not show.
	sort.SliceStable(probs, func(i, j int) bool { return probs[i].Key < probs[j].Key })
	return probs
}

// minContext is the smallest num_ctx worth running: the first prompt alone is ~700 tokens.
const minContext = 1024

func checkURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return fmt.Sprintf("%q is not a URL like %q", s, DefaultOllamaHost)
	}
	return ""
}

func checkCommands(cmds []string, bad func(string)) {
	if len(cmds) == 0 {
		bad(`empty; agents need at least "ask_user" and "finish"`)
	}
	seen := map[string]bool{}
	for i, name := range cmds {
		switch {
		case strings.TrimSpace(name) == "":
			bad(fmt.Sprintf("item %d is empty", i+1))
		case seen[name]:
			bad(fmt.Sprintf("%q is listed twice", name))
		}
		seen[name] = true
	}
}

// suggestKey returns ` (did you mean "x.y"?)` for an unknown key in section sec ("" at
// the top level): the same key in another section, or a known key a typo away.
func (d *decoder) suggestKey(sec, key string) string {
	for _, s := range sortedKeys(d.fields) {
		if _, ok := d.fields[s][key]; ok && s != sec {
			return fmt.Sprintf(" (did you mean %q?)", s+"."+key)
		}
	}
	if best := closest(key, sortedKeys(d.fields[sec])); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", sec+"."+best)
	}
	return ""
}

func (d *decoder) suggestSection(name string) string {
	if best := closest(name, sortedKeys(d.fields)); best != "" {
		return fmt.Sprintf(" (did you mean [%s]?)", best)
	}
	return ""
}

// closest returns the candidate nearest to s by edit distance, if it is near enough to be
// a typo (two edits, or a third of the word).
func closest(s string, candidates []string) string {
	best, bestDist := "", 0
	for _, c := range candidates {
		if d := editDistance(s, c); best == "" || d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == "" || (bestDist > 2 && bestDist*3 > len(s)) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
