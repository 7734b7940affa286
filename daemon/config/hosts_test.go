package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestOllamaHostsValidate(t *testing.T) {
	cleanEnv(t)
	for _, tc := range []struct {
		name  string
		set   func(o *OllamaConfig)
		wants []string // each must appear in the error; none: valid
	}{
		{"default_one_host", func(o *OllamaConfig) {}, nil},
		{"two_hosts", func(o *OllamaConfig) {
			o.Hosts = []OllamaHost{{URL: "127.0.0.1:11434", Slots: 2}, {URL: "http://gpu:11434", Models: []string{"qwen2.5:3b"}}}
		}, nil},
		{"slots_zero", func(o *OllamaConfig) { o.Slots = 0 }, []string{"ollama.slots: must be between 1 and 64"}},
		{"bad_url", func(o *OllamaConfig) { o.Hosts = []OllamaHost{{URL: "ftp://x"}} }, []string{`ollama.hosts.1: url "ftp://x" is not a URL`}},
		{"missing_url", func(o *OllamaConfig) { o.Hosts = []OllamaHost{{Slots: 2}} }, []string{`ollama.hosts.1: url "" is not a URL`}},
		{"same_server_twice", func(o *OllamaConfig) {
			o.Hosts = []OllamaHost{{URL: "127.0.0.1:11434"}, {URL: "http://127.0.0.1:11434"}}
		}, []string{"ollama.hosts.2: url \"http://127.0.0.1:11434\" is host 1 too: list each server once and give it more slots instead"}},
		{"too_many_slots", func(o *OllamaConfig) { o.Hosts = []OllamaHost{{URL: "a:1", Slots: 65}} }, []string{"ollama.hosts.1: slots must be between 1 and 64"}},
		{"model_with_space", func(o *OllamaConfig) { o.Hosts = []OllamaHost{{URL: "a:1", Models: []string{"qwen 2"}}} },
			[]string{`ollama.hosts.1: models item 1: "qwen 2" is not a model name`}},
		{"no_host_serves_the_model", func(o *OllamaConfig) { o.Hosts = []OllamaHost{{URL: "a:1", Models: []string{"other"}}} },
			[]string{`ollama.hosts: no host serves ollama.model "qwen2.5:3b"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.Ollama.Model = "qwen2.5:3b"
			tc.set(&c.Ollama)
			err := c.Validate()
			if len(tc.wants) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("valid; want a problem")
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestPoolHosts(t *testing.T) {
	cleanEnv(t)
	o := Default().Ollama
	o.Slots = 4
	if got, want := o.PoolHosts(), []OllamaHost{{URL: DefaultOllamaHost, Slots: 4}}; !reflect.DeepEqual(got, want) {
		t.Errorf("without [[ollama.hosts]]: %+v, want %+v", got, want)
	}
	o.Hosts = []OllamaHost{{URL: "a:1"}, {URL: "b:1", Slots: 3, Models: []string{"m"}}}
	want := []OllamaHost{{URL: "a:1", Slots: 1}, {URL: "b:1", Slots: 3, Models: []string{"m"}}}
	if got := o.PoolHosts(); !reflect.DeepEqual(got, want) {
		t.Errorf("with [[ollama.hosts]]: %+v, want %+v", got, want)
	}
}

func TestOllamaHostUnusedWarns(t *testing.T) {
	cleanEnv(t)
	c := Default()
	c.Ollama.Host = "http://other:11434"
	c.Ollama.Hosts = []OllamaHost{{URL: "a:1"}}
	w := c.Warnings()
	if len(w) != 1 || w[0].Key != "ollama.host" || !strings.Contains(w[0].Msg, "unused") {
		t.Errorf("warnings %+v, want one saying ollama.host is unused", w)
	}
	c.Ollama.Hosts = nil
	if w := c.Warnings(); len(w) != 0 {
		t.Errorf("without hosts: warnings %+v", w)
	}
}

func TestOllamaHostsChanges(t *testing.T) {
	cleanEnv(t)
	old, cur := Default(), Default()
	cur.Ollama.Slots = 2
	cur.Ollama.Hosts = []OllamaHost{{URL: "a:1", Slots: 2}}
	got := Changes(old, cur)
	if !reflect.DeepEqual(got, []string{"ollama.hosts", "ollama.slots"}) {
		t.Errorf("Changes = %v, want ollama.hosts and ollama.slots (both need a restart)", got)
	}
	// An [[ollama.hosts]] list with the same tables is no change.
	old.Ollama.Hosts, old.Ollama.Slots = []OllamaHost{{URL: "a:1", Slots: 2}}, 2
	if got := Changes(old, cur); len(got) != 0 {
		t.Errorf("Changes = %v, want none", got)
	}
}
