package config

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
)

// oldKeys are what an older agentd read and the config now says another way: [web]
// (now [web_commands]), [ollama] host and slots (now one [[ollama.hosts]] table) and
// agent.component_order (dropped: components keep their default order). Load reads
// them with a warning naming the new form, so an old config keeps working.
type oldKeys struct {
	host                string
	slots               int
	hostLine, slotsLine int
	bad                 bool // one did not decode, and has its problem
}

// renameWeb reads the file's [web] as [web_commands].
func (d *decoder) renameWeb(top map[string]toml.Primitive) {
	prim, ok := top["web"]
	if !ok {
		return
	}
	delete(top, "web")
	line := d.line(prim)
	if _, both := top["web_commands"]; both {
		d.problem(line, "", "[web] is the old name of [web_commands], which the file has too: move its keys into [web_commands]")
		return
	}
	top["web_commands"], d.alias = prim, map[string]string{"web_commands": "web"}
	d.note(line, "", "[web] is the old name of [web_commands]: rename the section (it is read as [web_commands] meanwhile)")
}

// read takes the old key full at line, if it is one, and reports whether it was.
func (o *oldKeys) read(d *decoder, full string, line int, prim toml.Primitive) bool {
	var v any
	switch full {
	case "agent.component_order":
		d.note(line, full, "no longer read: components keep their default order; remove it")
		return true
	case "ollama.host":
		o.hostLine, v = line, &o.host
	case "ollama.slots":
		o.slotsLine, v = line, &o.slots
	default:
		return false
	}
	if err := d.md.PrimitiveDecode(prim, v); err != nil {
		d.problem(line, full, "want %s, got %s", map[string]string{"ollama.host": "a string", "ollama.slots": "a whole number"}[full], typeDesc(d.typ("ollama", full[7:])))
		o.bad = true
	}
	return true
}

// apply puts [ollama] host and slots into c as the one [[ollama.hosts]] table they
// meant, checked as strictly as they were; beside [[ollama.hosts]] they are unused,
// and said so.
func (o *oldKeys) apply(c *Config, d *decoder) {
	line := cmp.Or(o.hostLine, o.slotsLine)
	switch {
	case line == 0 || o.bad:
		return
	case d.lines["ollama.hosts"] > 0:
		d.note(line, "ollama.host", "unused: [[ollama.hosts]] is set, so calls go to its hosts only; add %s there, or remove ollama.host and ollama.slots", o.host)
		return
	}
	h := c.Ollama.Hosts[0]
	if o.hostLine > 0 {
		// The old key always wanted a scheme; [[ollama.hosts]] reads any form Ollama does.
		if checkURL(o.host) != "" || !strings.Contains(o.host, "://") {
			d.problem(o.hostLine, "ollama.host", "%q is not a URL like %q", o.host, DefaultOllamaHost)
			return
		}
		h.URL = o.host
	}
	if o.slotsLine > 0 {
		if o.slots < 1 || o.slots > maxSlots {
			d.problem(o.slotsLine, "ollama.slots", "must be between 1 and %d (the server's OLLAMA_NUM_PARALLEL), got %d", maxSlots, o.slots)
			return
		}
		h.Slots = o.slots
	}
	c.Ollama.Hosts, d.lines["ollama.hosts.1"] = []OllamaHost{h}, line
	d.note(line, "ollama.host", "[ollama] host and slots are the old form of one [[ollama.hosts]] table: "+
		"write an [[ollama.hosts]] table with url = %q and slots = %d instead", h.URL, h.Slots)
}

func (d *decoder) note(line int, key, format string, args ...any) {
	d.notes = append(d.notes, Problem{Line: line, Key: key, Msg: fmt.Sprintf(format, args...)})
}
