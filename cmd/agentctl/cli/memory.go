package cli

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/agentd/agentd/api"

	"github.com/agentd/agentd/internal/display"
)

var memoryCmd = &command{
	name:  "memory",
	args:  "add|search|ls|rm|import|export|reindex|stats [--agent AGENT] [--json] ...",
	short: "search, add, import and export agents' long-term memories",
	long: `Memory works with what agents remember: every step they took, your feedback and
answers, notes they saved with memory_add, and the files they wrote. The most relevant
memories go into each prompt; agents also search them with memory_search.

  agentctl memory search [--agent AGENT] [--kind KIND] [-k N] WORDS...
                     the best matches, with their scores, sources and why they matched
                     (the words found, and the date when you ask about time); without
                     --agent, every agent's memories
  agentctl memory add [--agent AGENT] [--kind KIND] [--source TEXT] [--speaker NAME] TEXT...
                     remember TEXT; without --agent every agent shares it (kind: note);
                     --speaker: who said it, so "what did NAME say" finds it
  agentctl memory ls [--agent AGENT] [--kind KIND] [--limit N]
                     the newest memories
  agentctl memory rm ID...
                     forget memories (ids from ls or search)
  agentctl memory reindex
                     rebuild the search index from the database and swap it in; searches
                     go on meanwhile (agentd also does this itself when the index is lost)
  agentctl memory import [--agent AGENT] FILE.jsonl
                     remember many things at once: a chat log, notes, facts (see below)
  agentctl memory export [--agent AGENT] > FILE.jsonl
                     every memory (or an agent's own) as JSONL, the format import reads
  agentctl memory stats [--agent AGENT]
                     how many memories, indexed and waiting; per agent: count, size,
                     oldest and newest, kinds

Kinds: episode, result, feedback, note, chat, file.

Import files have one JSON object a line:
  {"text": "Rosa: I went to the pottery class yesterday.", "speaker": "Rosa",
   "time": "2023-05-08T13:56:00Z", "tags": ["pottery"], "agent": "helper"}
  text     what to remember (required; at most 8000 bytes)
  time     when it happened, RFC 3339 (default: now); "yesterday" in the text is read
           against it
  speaker  who said it (kind chat), or source: where it came from (kind note)
  context  the turn just before (a chat log's previous line): searched beside the
           text, so a short answer is found by its question's words
  kind     one of the kinds above; agent: the owner (default --agent, else shared)
  tags     labels; id: keeps a memory's identity (export writes it)
The whole file is checked before anything is stored: a bad line is named with its
number, its field and the fix, and nothing is imported. The file then goes in batches
of up to 1000 lines, each stored whole or not at all; should agentd refuse one, the error
says up to which line the file was imported. Importing a file again replaces its
memories instead of doubling them, so export > a.jsonl, then import a.jsonl into
another agentd, gives the same memories (create its agents first).`,
	run: verb(memoryVerbs.runMemory),
}

// memoryFlags are the flags of agentctl memory's subcommands.
type memoryFlags struct {
	agent, kind, source, speaker string
	k, limit                     int
}

func (a memoryVerbs) runMemory(ctx context.Context, args []string) error {
	fs := a.newFlagSet()
	var f memoryFlags
	fs.StringVar(&f.agent, "agent", "", "the `AGENT` (name or id) whose memories; none: all (shared for add and import)")
	fs.StringVar(&f.kind, "kind", "", "only memories of this `KIND` (add: the new memory's kind)")
	fs.StringVar(&f.source, "source", "", "add: where the memory comes from (`TEXT` shown with it)")
	fs.StringVar(&f.speaker, "speaker", "", "add: who said it (a person's `NAME`), searched as a field of its own")
	fs.IntVar(&f.k, "k", 0, "search: return `N` results (default 10)")
	fs.IntVar(&f.limit, "limit", 0, "ls: show the newest `N` memories (default 50)")
	pos, err := a.parse(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("missing what to do: add, search, ls, rm, import, export, reindex or stats")
	}
	verb, rest := pos[0], pos[1:]
	switch verb {
	case "add":
		return a.memoryAdd(ctx, f, rest)
	case "search":
		return a.memorySearch(ctx, f, rest)
	case "ls":
		return a.memoryList(ctx, f, rest)
	case "rm":
		return a.memoryRemove(ctx, rest)
	case "import":
		return a.memoryImport(ctx, f, rest)
	case "export":
		return a.memoryExport(ctx, f, rest)
	case "reindex", "stats":
		if len(rest) > 0 {
			return usagef("memory %s takes no arguments, got %q", verb, rest)
		}
		return a.memoryStats(ctx, f, verb == "reindex")
	}
	return usagef("unknown memory command %q: want add, search, ls, rm, import, export, reindex or stats", verb)
}

func (a memoryVerbs) memoryAdd(ctx context.Context, f memoryFlags, words []string) error {
	text := strings.TrimSpace(strings.Join(words, " "))
	if text == "" {
		return usagef("missing TEXT: what to remember")
	}
	m, err := api.AddMemoryRoute.Do(ctx, a.api(), "", api.MemoryAddRequest{Agent: f.agent, Kind: f.kind, Text: text, Source: f.source, Speaker: f.speaker})
	return printResult(a.app, m, agentErr(f.agent, err), func() {
		fmt.Fprintf(a.stdout, "remembered %s (%s, %s)\n", m.ID, m.Kind, owner(m.Agent, m.AgentID))
	})
}

func (a memoryVerbs) memorySearch(ctx context.Context, f memoryFlags, words []string) error {
	query := strings.TrimSpace(strings.Join(words, " "))
	if query == "" {
		return usagef("missing WORDS to search for")
	}
	req := api.MemorySearchRequest{Agent: f.agent, Query: query, K: f.k}
	if f.kind != "" {
		req.Kinds = []string{f.kind}
	}
	hits, err := api.SearchMemoryRoute.Do(ctx, a.api(), "", req)
	if err != nil {
		return agentErr(f.agent, err)
	}
	if a.json {
		return a.printJSON(hits)
	}
	if len(hits) == 0 {
		// The daemon waited a while for what was queued before the search; more may
		// still be on its way into the index (a big import, a rebuild).
		if st, err := api.MemoryStatsRoute.Do(ctx, a.api(), "", api.None{}); err == nil && (st.Queued > 0 || st.Rebuilding) {
			a.note("no memory matches %q yet: %s still being indexed; search again in a moment (agentctl memory stats shows the queue)",
				query, display.Count(max(st.Queued, 1), "memory is", "memories are"))
			return nil
		}
		a.note("no memory matches %q", query)
		return nil
	}
	tw := table(a.stdout, "SCORE\tBM25\tSIM\tKIND\tAGENT\tSOURCE\tID\tWHY\tTEXT")
	for _, m := range hits {
		fmt.Fprintf(tw, "%.3f\t%.3f\t%.3f\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Score, m.BM25, m.Similarity, line(m.Kind), line(owner(m.Agent, m.AgentID)),
			truncate(m.Source, 30), line(m.ID), truncate(why(m.Why), 40), truncate(m.Text, 70))
	}
	return tw.Flush()
}

func (a memoryVerbs) memoryList(ctx context.Context, f memoryFlags, rest []string) error {
	if len(rest) > 0 {
		return usagef("memory ls takes no arguments, got %q (filter with --agent and --kind)", rest)
	}
	list, err := api.MemoriesRoute.Do(ctx, a.api(), "", api.MemoryListRequest{Agent: f.agent, Kind: f.kind, Limit: f.limit})
	if err != nil {
		return agentErr(f.agent, err)
	}
	return printList(a.app, list, "no memories yet", "ID\tKIND\tAGENT\tSOURCE\tCREATED\tTEXT", func(m *api.Memory) string {
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", line(m.ID), line(m.Kind), line(owner(m.Agent, m.AgentID)), truncate(m.Source, 30),
			formatTime(m.CreatedAt), truncate(m.Text, 70))
	})
}

func (a memoryVerbs) memoryRemove(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return usagef("missing ID: which memory to forget (see agentctl memory ls)")
	}
	for _, id := range ids {
		if err := api.DeleteMemoryRoute.Send(ctx, a.api(), id, api.None{}); err != nil {
			return err
		}
		if !a.json {
			fmt.Fprintf(a.stdout, "forgot %s\n", id)
		}
	}
	return nil
}

func (a memoryVerbs) memoryStats(ctx context.Context, f memoryFlags, reindex bool) error {
	var st *api.MemoryStats
	var err error
	if reindex {
		a.note("rebuilding the memory index from the database…")
		st, err = api.ReindexMemoryRoute.Do(ctx, a.api(), "", api.None{})
	} else {
		st, err = api.MemoryStatsRoute.Do(ctx, a.api(), "", api.None{})
	}
	if err != nil {
		return err
	}
	if f.agent != "" {
		if st.Agents, err = a.agentStats(ctx, f.agent, st.Agents); err != nil {
			return err
		}
	}
	if a.json {
		return a.printJSON(st)
	}
	tw := table(a.stdout)
	fmt.Fprintf(tw, "memories\t%d\n", st.Memories)
	fmt.Fprintf(tw, "indexed\t%d (%s)\n", st.Indexed, st.Generation)
	fmt.Fprintf(tw, "queued\t%d\n", st.Queued)
	if st.EmbedModel != "" {
		fmt.Fprintf(tw, "embeddings\t%d by %s, %d failures\n", st.Vectors, st.EmbedModel, st.EmbedFailures)
	}
	switch {
	case st.Rebuilding:
		fmt.Fprintf(tw, "rebuild\trunning\n")
	case st.NeedsRebuild:
		fmt.Fprintf(tw, "rebuild\tneeded: %s\n", st.RebuildReason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return a.printAgentStats(st.Agents)
}

// owner names the agent a memory (or its stats) belongs to, or says it is shared.
func owner(agent, id string) string { return cmp.Or(agent, id, "(shared)") }
