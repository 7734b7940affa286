package agent

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/testutil"
)

// speakerChat is a thread as the chat relay remembers it: each message with its speaker
// and the thread's previous words as context. Only Ana's first message and her short
// answer say what the questions below ask about; the others talk about the same deadline.
var speakerChat = []api.MemoryAddRequest{
	{Kind: "chat", Text: "the deadline for the report is Monday", Source: "slack message from Bo", Speaker: "Bo"},
	{Kind: "chat", Text: "the deadline moved to Friday", Source: "slack message from Ana", Speaker: "Ana",
		Context: "the deadline for the report is Monday"},
	{Kind: "chat", Text: "I think the deadline is too tight", Source: "slack message from Cy", Speaker: "Cy",
		Context: "the deadline moved to Friday"},
	{Kind: "chat", Text: "about the deadline, we need more testers", Source: "slack message from Bo", Speaker: "Bo",
		Context: "I think the deadline is too tight"},
	{Kind: "chat", Text: "which release is that?", Source: "slack message from Cy", Speaker: "Cy"},
	{Kind: "chat", Text: "the green one", Source: "slack message from Ana", Speaker: "Ana",
		Context: "which colour did the customer pick for the banner?"},
}

// A chat memory's speaker is searched as a field: "what did Ana say about the deadline"
// finds Ana's words through the daemon's own search, says it matched the speaker, and a
// short answer is found by the words of the turn before it. A rebuild of the index from
// the database (agentctl memory reindex) keeps both.
func TestMemorySpeakerAndContextFoundAndKeptByReindex(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, withMemory(t))
	a := h.create(api.CreateAgentRequest{Name: "keeper", Description: "d", Goals: []string{"g"}, Start: new(bool)})
	svc := h.sup.memoryService
	for _, req := range speakerChat {
		req.Agent = "keeper"
		if _, err := svc.AddMemory(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string) {
		t.Helper()
		hits, err := svc.SearchMemory(ctx, api.MemorySearchRequest{Agent: "keeper", Query: "what did Ana say about the deadline?"})
		if err != nil || len(hits) == 0 {
			t.Fatalf("%s: search = %+v, %v", when, hits, err)
		}
		top := hits[0]
		if top.Text != "the deadline moved to Friday" || top.Speaker != "Ana" {
			t.Errorf("%s: top hit for Ana's words is %q by %q, want Ana's \"the deadline moved to Friday\"", when, top.Text, top.Speaker)
		}
		if top.Why == nil || !slices.Contains(top.Why.Fields, "speaker") || !slices.Contains(top.Why.Fields, "text") {
			t.Errorf("%s: top hit says why %+v; want the text and speaker fields", when, top.Why)
		}
		hits, err = svc.SearchMemory(ctx, api.MemorySearchRequest{Agent: "keeper", Query: "which colour did the customer pick?", K: 3})
		if err != nil || len(hits) == 0 || hits[0].Text != "the green one" {
			t.Errorf("%s: the short answer is not found by its question's words (its context): %+v, %v", when, hits, err)
		}
	}
	ix := h.opt.Memory.Index
	// A new index is first rebuilt from the (empty) store in the background.
	if !testutil.Wait(10*time.Second, func() bool { return !ix.NeedsRebuild() && !svc.mem.rebuilding.Load() }) {
		t.Fatalf("the first rebuild did not end: %+v", ix.Stats())
	}
	flush(t, ix)
	check("as added")
	if _, err := svc.ReindexMemory(ctx); err != nil {
		t.Fatal(err)
	}
	check("after reindex")
	ms := storedMemories(t, h.st, a.ID)
	i := slices.IndexFunc(ms, func(m store.Memory) bool { return m.Text == "the green one" })
	if i < 0 || ms[i].Speaker != "Ana" || !strings.Contains(ms[i].Context, "which colour") {
		t.Errorf("stored chat memory = %+v, want speaker Ana and the question as context", ms)
	}
}

// The prompt's memory line says who spoke, once: "Ana: …" in place of the relay's
// "slack message from Ana".
func TestMemoryPromptNamesTheSpeaker(t *testing.T) {
	ix := openIndex(t, t.TempDir())
	t.Cleanup(func() { ix.Close() })
	f := newPromptFixture(t, func(o *Options) {
		o.Directives, o.Memory = config.Default().Directives(), MemoryOf(config.Default().Memory, ix)
	})
	ctx := context.Background()
	a, err := f.sup.runs.CreateAgent(ctx, api.CreateAgentRequest{Name: "keeper", Description: benchDescription,
		Task: "What did Ana say about the deadline?", Start: new(bool)})
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range speakerChat {
		req.Agent = a.ID
		if _, err := f.sup.memoryService.AddMemory(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, ix)
	var sa *store.Agent
	if err := f.st.View(ctx, func(tx *store.Tx) (err error) { sa, err = tx.Agent(a.ID); return err }); err != nil {
		t.Fatal(err)
	}
	_, msgs := f.sup.prompt(ctx, f.sup.live(), sa, f.sup.stepOf(sa), "m", 4096, nil)
	sec := memorySection(render(msgs))
	if !strings.Contains(sec, "\n- Ana: the deadline moved to Friday") {
		t.Errorf("the memory section does not say Ana said it:\n%s", sec)
	}
	if strings.Contains(sec, "message from") {
		t.Errorf("the memory section names the speaker twice (source and line):\n%s", sec)
	}
}

// An export line has a speaker or a source, as import reads it back: a relay's chat memory
// exports its speaker, an older chat memory without one its source as the speaker.
func TestExportRecordSpeaker(t *testing.T) {
	cases := []struct {
		name            string
		m               store.Memory
		speaker, source string
	}{
		{name: "relay_chat_exports_its_speaker", m: store.Memory{Kind: "chat", Source: "slack message from Ana", Speaker: "Ana"}, speaker: "Ana"},
		{name: "chat_without_speaker_exports_its_source_as_speaker", m: store.Memory{Kind: "chat", Source: "Rosa"}, speaker: "Rosa"},
		{name: "note_exports_its_source", m: store.Memory{Kind: "note", Source: "kickoff notes"}, source: "kickoff notes"},
		{name: "note_with_a_speaker_exports_the_speaker", m: store.Memory{Kind: "note", Source: "minutes", Speaker: "Bo"}, speaker: "Bo"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.m.Text = "x"
			r := exportRecord(c.m, nil)
			if r.Speaker != c.speaker || r.Source != c.source {
				t.Errorf("exported speaker %q, source %q; want %q, %q", r.Speaker, r.Source, c.speaker, c.source)
			}
			if err := r.Check(); err != nil {
				t.Errorf("import would refuse the exported record: %v", err)
			}
		})
	}
}
