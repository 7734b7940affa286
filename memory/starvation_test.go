package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestNoStarvationAtScale: terms common across the whole index (other agents' memories) must
// still find this agent's memories. At the real thresholds, with 200 agents whose memories
// say "john" or "attributes" 2,000 times each, the fast query form only finds memories
// with both rarest terms together, and used to return nothing for an agent whose only
// match says "John" alone.
func TestNoStarvationAtScale(t *testing.T) {
	if testing.Short() {
		t.Skip("indexes 6,000 memories")
	}
	ix := open(t, Options{})
	var docs []Doc
	for i := range 6000 {
		// A third each: "john", "attributes", neither — each common, neither above half.
		text := fmt.Sprintf("john listed build %d", i)
		switch i % 3 {
		case 1:
			text = fmt.Sprintf("attributes of deploy %d were listed", i)
		case 2:
			text = fmt.Sprintf("lunch order %d", i)
		}
		docs = append(docs, Doc{ID: fmt.Sprintf("f%05d", i), Agent: fmt.Sprintf("agent-%03d", i%200),
			Kind: KindChat, Text: text, Created: t0.Add(time.Duration(i) * time.Second)})
	}
	docs = append(docs,
		doc("mine-john", "me", KindChat, "John loves hiking in the mountains"),
		doc("mine-attr", "me", KindChat, "Kind and patient are the attributes I admire"),
		doc("mine-other", "me", KindChat, "the weather was lovely"),
		doc("solo-john", "solo", KindChat, "John came round for tea"))
	load(t, ix, docs...)
	cases := []struct {
		name  string
		agent string
		text  string
		want  []string // all of them among the hits, in any order
	}{
		{"two_common_terms_each_in_one_memory", "me", "What attributes describe John?", []string{"mine-john", "mine-attr"}},
		{"zero_hits_today_when_no_memory_has_both", "solo", "What attributes describe John?", []string{"solo-john"}},
		{"all_agents_never_empty", "*", "What attributes describe John?", []string{"solo-john"}},
		{"one_common_term", "me", "john", []string{"mine-john"}},
		{"common_term_with_unknown_words", "me", "does John zyzzyva qwertyuiop", []string{"mine-john"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := Query{Agent: c.agent, Text: c.text, K: 10}
			if c.agent == "*" {
				// Every agent's memories: the 6,000 others all match one term or the other
				// and outrank solo-john, so ask for them all.
				q = Query{AllAgents: true, Text: c.text, K: 10_000}
			}
			hits := find(t, ix, q)
			got := map[string]bool{}
			for _, h := range hits {
				if c.agent != "*" && h.Agent != c.agent && h.Agent != "" {
					t.Errorf("hit %s belongs to agent %q", h.ID, h.Agent)
				}
				got[h.ID] = true
			}
			for _, w := range c.want {
				if !got[w] {
					t.Errorf("%q: %s not found; hits %v", c.text, w, ids(hits))
				}
			}
		})
	}
}

// TestRecallSynthetic runs the recall harness on the repo's own small dialog set with filler
// from other agents: every question finds something and the evidence ranks high.
func TestRecallSynthetic(t *testing.T) {
	dialogs := loadDialogs(t, []string{"testdata/dialog.json"})
	if n := len(dialogs[0].docs()); n != 15 {
		t.Fatalf("synthetic dialog has %d turns, want 15", n)
	}
	for _, hl := range []time.Duration{0, 720 * time.Hour} {
		t.Run(fmt.Sprintf("half_life_%v", hl), func(t *testing.T) {
			res := runRecall(t, dialogs, 3000, 50, hl)
			t.Logf("\n%s", res.table())
			if res.zeroHits != 0 {
				t.Errorf("%d questions found nothing", res.zeroHits)
			}
			if r := res.recall(0, 1); r < 85 {
				t.Errorf("R@10 %.1f, want ≥ 85", r)
			}
			if res.n[5] != 1 || res.n[0] != 8 {
				t.Errorf("counted %d adversarial and %d other questions, want 1 and 8", res.n[5], res.n[0])
			}
		})
	}
}

// A query keeps its maxQueryTerms rarest terms by their frequency in the whole index, so
// words only other agents' memories hold can push out the word this agent's memories
// have; that cut counts as pruning, and the exhaustive form keeps more terms, so the
// search still finds the agent's memories (a prompt's query has far more than 16 terms).
func TestNoStarvationByTheTermCap(t *testing.T) {
	ix := open(t, Options{})
	var docs []Doc
	var words []string
	for i := range maxQueryTerms {
		w := fmt.Sprintf("w%cx%c", 'a'+i%26, 'a'+i/26) // distinct, analyzed as themselves
		words = append(words, w)
		docs = append(docs, doc(fmt.Sprintf("other-%d", i), "other", KindNote, "the word "+w))
	}
	docs = append(docs,
		doc("mine-1", "me", KindNote, "the kiln is hot"),
		doc("mine-2", "me", KindNote, "the kiln was lit at noon"))
	load(t, ix, docs...)
	hits := find(t, ix, Query{Agent: "me", Text: "kiln " + strings.Join(words, " "), K: 10})
	if len(hits) == 0 {
		t.Errorf("the search found nothing, though two of the agent's memories say \"kiln\"")
	}
}

// An ordinary prompt-sized query (the task and two steps' command, reasoning and results:
// ~100 distinct terms) has more terms than the fast form keeps. When the fast form finds
// fewer than wanted, the search goes on with the wide form (more terms, still fast), and
// with the exhaustive form only with the fast form's 16 terms: never an exhaustive walk of
// 64 terms × 3 fields over every memory of the agent, which a model could force at every
// step with its reasoning's words (44 ms at 300k memories, about 150 ms at 1M).
func TestPromptQueryStaysFast(t *testing.T) {
	if testing.Short() {
		t.Skip("indexes 100,000 memories")
	}
	n := 100_000
	ix := open(t, Options{})
	gen := newCorpusGen(1, 100)
	if err := ix.Rebuild(context.Background(), func(yield func(Doc) error) error {
		for i := range n {
			if err := yield(gen.doc(i)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	g := ix.live()
	docs, _ := g.idx.DocCount()
	q := Query{Agent: "agent-007", K: 32, HalfLife: 720 * time.Hour, Text: newCorpusGen(9, 100).words(200)}
	bq, pruned, err := buildQuery(ctx, g, q, nil, docs, fastForm)
	if err != nil || bq == nil {
		t.Fatal(bq, err)
	}
	best := func(f func()) time.Duration {
		b := time.Duration(1 << 62)
		for range 5 {
			s := time.Now()
			f()
			b = min(b, time.Since(s))
		}
		return b
	}
	var fastHits int
	fast := best(func() {
		h, err := ix.runBM25(ctx, g, bq, docs, 96)
		if err != nil {
			t.Fatal(err)
		}
		fastHits = len(h)
	})
	slow := ix.slowForms.Load()
	full := best(func() {
		if _, err := ix.Search(ctx, q); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%d memories, %d query terms: fast form %v (%d hits, pruned=%v); Search %v", docs,
		len(queryTerms(g.an.text, q.Text)), fast, fastHits, pruned, full)
	// What keeps it fast, counted rather than timed (a loaded machine skews the times):
	// the search stays on the fast form, never the wide or exhaustive one.
	if n := ix.slowForms.Load() - slow; n != 0 {
		t.Errorf("an ordinary prompt query's search ran a slower form %d times in 5 searches (it takes %v, %.0fx its fast form's %v)",
			n, full, float64(full)/float64(fast), fast)
	}
}

// The prompt mode of the recall benchmark: for every question it builds
// the memory section the agent's prompt would carry at a context of RECALL_PROMPT_CTX tokens
// (Search, then Fit into SectionBudget, rendered by Section, as daemon/agent does) and
// counts the evidence turns that reach it:
//
//	RECALL_PROMPT_CTX=2048 scripts/bench.sh memory-recall ../shared/data/locomo-dev/*.json

// promptEvidence counts, over questions of categories 1–4, the share of evidence turns
// shown whole, shown at all (whole or as a snippet), and the questions with every one of
// their evidence turns shown.
// Snippets can cut the answer off: answered counts, over the questions whose answer is
// written out in their evidence turns, those whose answer is in the section.
type promptEvidence struct {
	questions          int
	whole, shown       float64
	allShown           int
	chars, memories    int
	answerable, answer int
}

func (p promptEvidence) String() string {
	n := float64(max(1, p.questions))
	return fmt.Sprintf("evidence in the prompt: %.1f%% shown (%.1f%% whole), questions with all their evidence %.1f%%, answer in the prompt %.1f%% (of %d with the answer verbatim in their evidence); section %d chars, %.1f memories on average (%d questions)",
		100*p.shown/n, 100*p.whole/n, 100*float64(p.allShown)/n, 100*float64(p.answer)/float64(max(1, p.answerable)), p.answerable,
		p.chars/max(1, p.questions), float64(p.memories)/n, p.questions)
}

// answersOf reads the questions' answers of LoCoMo-format files (the harness's question
// type has none): question text → answer.
func answersOf(tb testing.TB, paths []string) map[string]string {
	out := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		var f struct {
			QA []struct {
				Question string          `json:"question"`
				Answer   json.RawMessage `json:"answer"`
			} `json:"qa"`
		}
		if err := json.Unmarshal(b, &f); err != nil {
			tb.Fatal(err)
		}
		for _, q := range f.QA {
			var s string
			if json.Unmarshal(q.Answer, &s) != nil {
				s = string(q.Answer) // a number
			}
			out[q.Question] = strings.ToLower(strings.TrimSpace(s))
		}
	}
	return out
}

// runPromptRecall measures evidence in the prompt at numCtx over an index of the dialogs
// and filler memories.
func runPromptRecall(tb testing.TB, dialogs []dialog, answers map[string]string, filler, chatty, numCtx int) promptEvidence {
	ix, _ := indexDialogs(tb, dialogs, filler, chatty)
	defer ix.Close()
	budget := promptBudget(numCtx)
	var res promptEvidence
	for _, d := range dialogs {
		text := map[string]string{}
		for _, doc := range d.docs() {
			text[doc.ID] = strings.Join(strings.Fields(doc.Text), " ")
		}
		for _, q := range d.qa {
			if q.Category == 5 || len(q.Evidence) == 0 {
				continue
			}
			hits, err := ix.Search(context.Background(), Query{Agent: d.name, Text: q.Question, K: PromptCandidates})
			if err != nil {
				tb.Fatal(err)
			}
			shown := Fit(hits, FitOptions{Query: q.Question, Budget: budget})
			res.add(q, d.name, text, answers[q.Question], shown)
		}
	}
	return res
}

// add counts one question's section: shown is what Fit chose for it, text the dialog's
// turns by memory ID, answer the question's answer ("" when it has none).
func (p *promptEvidence) add(q question, agent string, text map[string]string, answer string, shown []Shown) {
	byID := map[string]Shown{}
	for _, s := range shown {
		byID[s.ID] = s
	}
	section := Section(shown)
	p.chars += len(section)
	var evidence strings.Builder
	for _, ev := range q.Evidence {
		evidence.WriteString(text[agent+"/"+strings.TrimSpace(ev)] + "\n")
	}
	if answer != "" && strings.Contains(strings.ToLower(evidence.String()), answer) {
		p.answerable++
		if strings.Contains(strings.ToLower(section), answer) {
			p.answer++
		}
	}
	p.memories += len(shown)
	p.questions++
	all := true
	for _, ev := range q.Evidence {
		id := agent + "/" + strings.TrimSpace(ev)
		s, ok := byID[id]
		if !ok {
			all = false
			continue
		}
		p.shown += 1 / float64(len(q.Evidence))
		if !s.Trimmed && s.Text == text[id] {
			p.whole += 1 / float64(len(q.Evidence))
		}
	}
	if all {
		p.allShown++
	}
}

// promptBudget is the budget daemon/agent gives Fit at numCtx when the rest of the prompt
// leaves room for the whole section: SectionBudget at its cautious 3 chars per token, less
// the section's heading (memoryHead there, 96 characters).
func promptBudget(numCtx int) int { return SectionBudget(numCtx, 3.0) - 96 }

// BenchmarkRecallPrompt runs the prompt mode on AGENTD_RECALL_FILES at RECALL_PROMPT_CTX
// tokens (default 2048), with the filler of BenchmarkRecall; without files it uses the
// synthetic set.
func BenchmarkRecallPrompt(b *testing.B) {
	paths := []string{"testdata/dialog.json"}
	if v := os.Getenv("AGENTD_RECALL_FILES"); v != "" {
		paths = strings.Split(v, ",")
	}
	dialogs := loadDialogs(b, paths)
	filler := envInt("AGENTD_RECALL_FILLER", 100_000)
	chatty := envInt("AGENTD_RECALL_CHATTY", 50)
	numCtx := envInt("RECALL_PROMPT_CTX", 2048)
	for range b.N {
		res := runPromptRecall(b, dialogs, answersOf(b, paths), filler, chatty, numCtx)
		fmt.Fprintf(os.Stderr, "num_ctx %d (memory section %d chars), %d filler memories: %s\n", numCtx, promptBudget(numCtx), filler, res)
		n := float64(max(1, res.questions))
		b.ReportMetric(100*res.shown/n, "evidence-%")
		b.ReportMetric(100*res.whole/n, "whole-%")
		b.ReportMetric(100*float64(res.answer)/float64(max(1, res.answerable)), "answer-%")
	}
}

// TestPromptRecallSynthetic keeps the prompt mode working on the repo's synthetic dialogs:
// at num_ctx 2048 most of their evidence, and the answers in it, reach the memory section.
func TestPromptRecallSynthetic(t *testing.T) {
	paths := []string{"testdata/dialog.json"}
	res := runPromptRecall(t, loadDialogs(t, paths), answersOf(t, paths), 2000, 50, 2048)
	if res.questions == 0 {
		t.Fatal("no questions in testdata/dialog.json")
	}
	if got := res.shown / float64(res.questions); got < 0.8 {
		t.Errorf("%s: want at least 80%% of the evidence shown", res)
	}
	if res.answerable == 0 || float64(res.answer) < 0.8*float64(res.answerable) {
		t.Errorf("%s: want the answer in the prompt for at least 80%% of the questions whose evidence holds it", res)
	}
	if res.chars/res.questions > promptBudget(2048) {
		t.Errorf("%s: the section is over its budget of %d chars", res, promptBudget(2048))
	}
}
