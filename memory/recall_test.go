package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The recall benchmark: dialogs in the LoCoMo format are ingested as one agent's
// memories each, through Index.Add like the daemon, mixed with other agents' memories, and
// every question is searched with its own text. Recall@k is the share of a question's
// evidence turns among the top k hits. scripts/bench.sh memory-recall runs it on real data:
//
//	AGENTD_RECALL_FILES=a.json,b.json go test -run '^$' -bench Recall ./memory/

// dialog is one LoCoMo-format conversation.
type dialog struct {
	name     string
	sessions []session
	qa       []question
}

type session struct {
	when  time.Time
	turns []turn
}

type turn struct {
	Speaker string `json:"speaker"`
	DiaID   string `json:"dia_id"`
	Text    string `json:"text"`
	Caption string `json:"blip_caption"`
}

type question struct {
	Question string   `json:"question"`
	Evidence []string `json:"evidence"`
	Category int      `json:"category"`
}

var sessionKey = regexp.MustCompile(`^session_(\d+)$`)

// parseDialog reads one LoCoMo-format conversation; name becomes its agent.
func parseDialog(name string, r io.Reader) (dialog, error) {
	var raw map[string]json.RawMessage
	if err := json.NewDecoder(r).Decode(&raw); err != nil {
		return dialog{}, fmt.Errorf("%s: %w", name, err)
	}
	d := dialog{name: name}
	var nums []int
	for k := range raw {
		if m := sessionKey.FindStringSubmatch(k); m != nil {
			n, _ := strconv.Atoi(m[1])
			nums = append(nums, n)
		}
	}
	sort.Ints(nums)
	for _, n := range nums {
		var s session
		if err := json.Unmarshal(raw[fmt.Sprintf("session_%d", n)], &s.turns); err != nil {
			return d, fmt.Errorf("%s: session_%d: %w", name, n, err)
		}
		var when string
		_ = json.Unmarshal(raw[fmt.Sprintf("session_%d_date_time", n)], &when)
		t, err := time.Parse("3:04 pm on 2 January, 2006", when)
		if err != nil {
			return d, fmt.Errorf("%s: session_%d_date_time %q: want like \"1:56 pm on 8 May, 2023\"", name, n, when)
		}
		s.when = t
		d.sessions = append(d.sessions, s)
	}
	if err := json.Unmarshal(raw["qa"], &d.qa); err != nil {
		return d, fmt.Errorf("%s: qa: %w", name, err)
	}
	for i, q := range d.qa {
		// A few entries list two turns in one string: "D8:6; D9:17".
		var ev []string
		for _, e := range q.Evidence {
			for _, part := range strings.Split(e, ";") {
				if part = strings.TrimSpace(part); part != "" {
					ev = append(ev, part)
				}
			}
		}
		d.qa[i].Evidence = ev
	}
	return d, nil
}

// docs are the dialog's turns as the memories the daemon would write for a chat thread: the
// message, who said it, and the previous message of the session as context.
func (d dialog) docs() []Doc {
	var out []Doc
	for _, s := range d.sessions {
		prev := ""
		for i, t := range s.turns {
			text := t.Text
			if t.Caption != "" {
				text += " [shared a photo: " + t.Caption + "]"
			}
			out = append(out, Doc{ID: d.name + "/" + t.DiaID, Agent: d.name, Kind: KindChat, Text: text,
				Source: "chat", Speaker: t.Speaker, Context: prev, Created: s.when.Add(time.Duration(i) * time.Second)})
			prev = text
		}
	}
	return out
}

// recallKs are the cut-offs reported.
var recallKs = []int{5, 10, 25, 50}

// recallResult sums recall per category (0 is overall, categories 1–4; 5 apart).
type recallResult struct {
	n        map[int]int
	sum      map[int][]float64
	zeroHits int
	lat      []time.Duration
	ingest   float64 // memories/s
}

func (r *recallResult) add(cat int, rec []float64) {
	if r.n == nil {
		r.n, r.sum = map[int]int{}, map[int][]float64{}
	}
	cats := []int{cat}
	if cat != 5 {
		cats = append(cats, 0)
	}
	for _, c := range cats {
		r.n[c]++
		if r.sum[c] == nil {
			r.sum[c] = make([]float64, len(recallKs))
		}
		for i := range rec {
			r.sum[c][i] += rec[i]
		}
	}
}

// recall returns R@recallKs[i] in percent for category c.
func (r *recallResult) recall(c, i int) float64 {
	if r.n[c] == 0 {
		return 0
	}
	return 100 * r.sum[c][i] / float64(r.n[c])
}

func (r *recallResult) percentile(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	l := slices.Clone(r.lat)
	slices.Sort(l)
	return l[min(len(l)-1, int(p*float64(len(l))))]
}

var categoryNames = map[int]string{0: "overall(1-4)", 1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}

func (r *recallResult) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-14s %5s %6s %6s %6s %6s\n", "category", "n", "R@5", "R@10", "R@25", "R@50")
	for _, c := range []int{1, 2, 3, 4, 0, 5} {
		if r.n[c] == 0 {
			continue
		}
		fmt.Fprintf(&b, "%-14s %5d %6.1f %6.1f %6.1f %6.1f\n", categoryNames[c], r.n[c],
			r.recall(c, 0), r.recall(c, 1), r.recall(c, 2), r.recall(c, 3))
	}
	fmt.Fprintf(&b, "zero-hit %d   ingest %.0f memories/s   search p50 %v p99 %v\n", r.zeroHits, r.ingest,
		r.percentile(0.5).Round(10*time.Microsecond), r.percentile(0.99).Round(10*time.Microsecond))
	return b.String()
}

// fillerDocs are other agents' memories: agent jargon (corpusGen), and chatty percent of them
// words drawn from the dialogs' own vocabulary by frequency, so conversational terms are
// common index-wide as they are in a daemon hosting many chatty agents.
func fillerDocs(n int, dialogs []dialog, chatty int) []Doc {
	gen := newCorpusGen(7, 100)
	var words []string
	for _, d := range dialogs {
		for _, s := range d.sessions {
			for _, t := range s.turns {
				words = append(words, strings.Fields(t.Text)...)
			}
		}
	}
	r := rand.New(rand.NewPCG(11, 13))
	out := make([]Doc, n)
	prev := ""
	for i := range out {
		out[i] = gen.doc(i)
		if r.IntN(100) < chatty && len(words) > 0 {
			w := make([]string, 8+r.IntN(25))
			for j := range w {
				w[j] = words[r.IntN(len(words))]
			}
			out[i].Text = strings.Join(w, " ")
			if out[i].Agent == "" {
				continue // shared: a note everyone sees, as before
			}
			// Other agents' chats have their own people and threads.
			out[i].Kind, out[i].Speaker, out[i].Context = KindChat, fillerNames[r.IntN(len(fillerNames))], prev
			prev = out[i].Text
		}
	}
	return out
}

var fillerNames = strings.Fields("Ada Bo Cyril Dana Emeka Farah Goran Hana Ivo Jun Kemal Lena Milo Nadia Otto Priya Quinn Rosa Sami Tove")

// indexDialogs indexes the dialogs' memories among filler other agents' memories, through
// Index.Add like the daemon, and returns the index and the ingest rate (memories/s).
func indexDialogs(tb testing.TB, dialogs []dialog, filler, chatty int) (*Index, float64) {
	ix, err := Open(tb.TempDir(), Options{})
	if err != nil {
		tb.Fatal(err)
	}
	var docs []Doc
	for _, d := range dialogs {
		docs = append(docs, d.docs()...)
	}
	fill := fillerDocs(filler, dialogs, chatty)
	// Interleave so each dialog's memories land among the others', as in a busy daemon.
	all := make([]Doc, 0, len(docs)+len(fill))
	step := max(1, len(fill)/max(1, len(docs)))
	for i, j := 0, 0; i < len(docs) || j < len(fill); {
		if i < len(docs) {
			all = append(all, docs[i])
			i++
		}
		e := min(j+step, len(fill))
		all = append(all, fill[j:e]...)
		j = e
	}
	start := time.Now()
	for i := 0; i < len(all); i += 8 { // the agent loop adds a few at a time
		if err := ix.Add(all[i:min(i+8, len(all))]...); err != nil {
			tb.Fatal(err)
		}
		for ix.Stats().Queued > ix.opts.QueueSize/2 {
			time.Sleep(time.Millisecond)
		}
	}
	if err := ix.Flush(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return ix, float64(len(all)) / time.Since(start).Seconds()
}

// runRecall builds an index of the dialogs plus filler memories and measures recall.
func runRecall(tb testing.TB, dialogs []dialog, filler, chatty int, halfLife time.Duration) *recallResult {
	ix, ingest := indexDialogs(tb, dialogs, filler, chatty)
	defer ix.Close()
	res := &recallResult{ingest: ingest}
	maxK := recallKs[len(recallKs)-1]
	var dump io.Writer
	if p := os.Getenv("AGENTD_RECALL_DUMP"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			tb.Fatal(err)
		}
		defer f.Close()
		dump = f
	}
	textOf := map[string]string{}
	for _, d := range dialogs {
		for _, doc := range d.docs() {
			textOf[doc.ID] = doc.Text
		}
	}
	for _, d := range dialogs {
		for _, q := range d.qa {
			t := time.Now()
			hits, err := ix.Search(context.Background(), Query{Agent: d.name, Text: q.Question, K: maxK, HalfLife: halfLife})
			if err != nil {
				tb.Fatal(err)
			}
			res.lat = append(res.lat, time.Since(t))
			if len(hits) == 0 {
				res.zeroHits++
			}
			if len(q.Evidence) == 0 {
				continue
			}
			rank := map[string]int{}
			for i, h := range hits {
				rank[h.ID] = i
			}
			rec := make([]float64, len(recallKs))
			for _, ev := range q.Evidence {
				r, ok := rank[d.name+"/"+strings.TrimSpace(ev)]
				for i, k := range recallKs {
					if ok && r < k {
						rec[i] += 1 / float64(len(q.Evidence))
					}
				}
			}
			res.add(q.Category, rec)
			if dump != nil && rec[1] < 1 {
				fmt.Fprintf(dump, "\n## cat %d R@10 %.2f  %s\n", q.Category, rec[1], q.Question)
				for _, ev := range q.Evidence {
					r, ok := rank[d.name+"/"+strings.TrimSpace(ev)]
					if !ok {
						r = -1
					}
					fmt.Fprintf(dump, "  ev %s rank %d: %s\n", ev, r, textOf[d.name+"/"+strings.TrimSpace(ev)])
				}
				for i, h := range hits[:min(5, len(hits))] {
					fmt.Fprintf(dump, "  top%d %.2f %s\n", i, h.Score, h.Text)
				}
			}
		}
	}
	return res
}

func loadDialogs(tb testing.TB, paths []string) []dialog {
	var out []dialog
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			tb.Fatal(err)
		}
		name := strings.TrimSuffix(p[strings.LastIndexByte(p, '/')+1:], ".json")
		d, err := parseDialog("conv-"+name, f)
		f.Close()
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// BenchmarkRecall runs the recall benchmark on AGENTD_RECALL_FILES (comma-separated) with
// AGENTD_RECALL_FILLER other agents' memories (default 100,000), AGENTD_RECALL_CHATTY percent
// of them conversational (default 50) and AGENTD_RECALL_HALFLIFE (e.g. 720h, default none),
// printing the table; without files it uses the synthetic set. For tuning:
// AGENTD_RECALL_DUMP=FILE writes each question the top 10 missed, with its evidence's rank
// and the top hits; AGENTD_RECALL_BOOSTS=context,speaker,dates and
// AGENTD_RECALL_CONTEXT_BYTES override the field weights and the context indexed.
func BenchmarkRecall(b *testing.B) {
	paths := []string{"testdata/dialog.json"}
	if v := os.Getenv("AGENTD_RECALL_FILES"); v != "" {
		paths = strings.Split(v, ",")
	}
	hl, _ := time.ParseDuration(os.Getenv("AGENTD_RECALL_HALFLIFE"))
	dialogs := loadDialogs(b, paths)
	filler := envInt("AGENTD_RECALL_FILLER", 100_000)
	chatty := envInt("AGENTD_RECALL_CHATTY", 50)
	maxContextBytes = envInt("AGENTD_RECALL_CONTEXT_BYTES", maxContextBytes)
	// AGENTD_RECALL_BOOSTS=context,speaker,dates overrides the field boosts, for tuning.
	if v := strings.Split(os.Getenv("AGENTD_RECALL_BOOSTS"), ","); len(v) == 3 {
		for i, p := range []*float64{&contextBoost, &speakerBoost, &datesBoost} {
			if f, err := strconv.ParseFloat(v[i], 64); err == nil {
				*p = f
			}
		}
	}
	for range b.N {
		res := runRecall(b, dialogs, filler, chatty, hl)
		b.Logf("recall over %d dialog(s), %d filler memories (%d%% chatty), half_life %v:\n%s", len(dialogs), filler, chatty, hl, res.table())
		fmt.Fprint(os.Stderr, res.table())
		b.ReportMetric(res.recall(0, 0), "R@5")
		b.ReportMetric(res.recall(0, 1), "R@10")
		b.ReportMetric(res.recall(0, 2), "R@25")
		b.ReportMetric(res.recall(0, 3), "R@50")
		b.ReportMetric(float64(res.zeroHits), "zero-hits")
		b.ReportMetric(res.ingest, "memories/s")
		b.ReportMetric(float64(res.percentile(0.99).Microseconds())/1000, "p99-ms")
	}
}
