package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

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
