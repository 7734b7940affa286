package api

import "time"

// Memory is one long-term memory: something an agent did, was told, saved or wrote, or a
// shared fact every agent can recall. Search results carry their scores.
type Memory struct {
	ID string `json:"id"`
	// AgentID and Agent (its name) own the memory; both empty for a shared memory.
	AgentID string `json:"agent_id,omitempty"`
	Agent   string `json:"agent,omitempty"`
	// Kind is episode, result, feedback, note, chat or file.
	Kind string `json:"kind"`
	Text string `json:"text"`
	// Source says where it came from: a step, a file path, a person.
	Source string `json:"source,omitempty"`
	// Speaker is who said it (a chat message's author); empty when nobody in particular.
	Speaker   string    `json:"speaker,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// Score ranks search results: BM25, or the reciprocal rank fusion of BM25 and embedding
	// similarity when an embedding model is configured, times the recency decay.
	Score float64 `json:"score,omitempty"`
	// BM25 is the text-match score; Similarity the cosine similarity (0 without embeddings).
	BM25       float64 `json:"bm25,omitempty"`
	Similarity float64 `json:"similarity,omitempty"`
	// Tags label the memory (set by an import).
	Tags []string `json:"tags,omitempty"`
	// Why says what a search result matched: words, fields, its date.
	Why *MemoryMatch `json:"why,omitempty"`
}

// MemoryKinds are the kinds a memory may have.
var MemoryKinds = []string{"episode", "result", "feedback", "note", "chat", "file"}

// MemoryAddRequest saves a memory.
type MemoryAddRequest struct {
	// Agent (name or id) owns the memory; empty makes it shared by every agent.
	Agent string `json:"agent,omitempty"`
	// Kind defaults to note.
	Kind   string `json:"kind,omitempty"`
	Text   string `json:"text"`
	Source string `json:"source,omitempty"`
	// Speaker is who said it (at most 256 bytes): searched as a field of its own, so "what
	// did Ana say about the deadline" finds Ana's words. Context is the turn just before it
	// in the same conversation (at most MaxTextBytes), indexed beside it with a low weight
	// so a short answer ("yes, Friday") is found by its question's words.
	Speaker string `json:"speaker,omitempty"`
	Context string `json:"context,omitempty"`
}

// MemorySearchRequest searches memories.
type MemorySearchRequest struct {
	// Agent (name or id) searches its own and the shared memories; empty searches all.
	Agent string `json:"agent,omitempty"`
	Query string `json:"query"`
	// Kinds restricts the search; empty means every kind.
	Kinds []string `json:"kinds,omitempty"`
	// K is how many results; 0 means 10, at most 100.
	K int `json:"k,omitempty"`
}

// MemoryListRequest lists memories, newest first.
type MemoryListRequest struct {
	Agent string `query:"agent"` // name or id: its own and the shared memories; empty lists all
	Kind  string `query:"kind"`  // empty: every kind
	Limit int    `query:"limit"` // 0 means 50, at most 1000
}

// MemoryStats describes the memory index.
type MemoryStats struct {
	// Memories counts the rows in the store (the source of truth); Indexed the documents
	// in the live index. They differ while indexing catches up or a rebuild is due.
	Memories      int    `json:"memories"`
	Indexed       uint64 `json:"indexed"`
	Vectors       int    `json:"vectors"`
	Queued        int    `json:"queued"`
	Generation    string `json:"generation"`
	EmbedModel    string `json:"embed_model,omitempty"`
	EmbedFailures uint64 `json:"embed_failures,omitempty"`
	Dropped       uint64 `json:"dropped,omitempty"`
	NeedsRebuild  bool   `json:"needs_rebuild"`
	RebuildReason string `json:"rebuild_reason,omitempty"`
	Rebuilding    bool   `json:"rebuilding"`
	// Agents describes each agent's memories (and the shared ones), most first.
	Agents []MemoryAgentStats `json:"agents"`
}
