package config

import (
	"fmt"

	"github.com/BurntSushi/toml"
)

// renamedSections are sections an older agentd read under another name: the file's old
// name is read as the new one, with a warning naming it, so an old config keeps working.
var renamedSections = map[string]string{"web": "web_commands"}

// oldKeys holds the keys an older agentd read that say something the config now says
// another way: [ollama] host and slots (now one [[ollama.hosts]] table) and
// agent.component_order (dropped: components keep their default order). Load reads
// them with a warning naming the new form.
type oldKeys struct {
	host      string
	slots     int
	hostLine  int
	slotsLine int
	bad       bool // one did not decode, and has its problem
}

// renameSections moves the file's old section names to their new ones.
func (d *decoder) renameSections(top map[string]toml.Primitive) {
	for old, cur := range renamedSections {
		prim, ok := top[old]
		if !ok {
			continue
		}
		line := d.line(prim)
		if line == 0 {
			var table map[string]toml.Primitive
			if d.md.PrimitiveDecode(prim, &table) == nil {
				line = d.firstLine(table)
			}
		}
		delete(top, old)
		if _, both := top[cur]; both {
			d.problem(line, "", "[%s] is the old name of [%s], which the file has too: move its keys into [%s]", old, cur, cur)
			continue
		}
		top[cur] = prim
		if d.alias == nil {
			d.alias = map[string]string{}
		}
		d.alias[cur] = old
		d.note(line, "", "[%s] is the old name of [%s]: rename the section (it is read as [%s] meanwhile)", old, cur, cur)
	}
}

// read takes the old key full at line, if it is one, and reports whether it was.
func (o *oldKeys) read(d *decoder, full string, line int, prim toml.Primitive) bool {
	switch full {
	case "agent.component_order":
		d.note(line, full, "no longer read: components keep their default order; remove it")
	case "ollama.host":
		o.hostLine = line
		if d.typ("ollama", "host") != "String" || d.md.PrimitiveDecode(prim, &o.host) != nil {
			d.problem(line, full, "want a string, got %s", typeDesc(d.typ("ollama", "host")))
			o.bad = true
		}
	case "ollama.slots":
		o.slotsLine = line
		if d.typ("ollama", "slots") != "Integer" || d.md.PrimitiveDecode(prim, &o.slots) != nil {
			d.problem(line, full, "want a whole number, got %s", typeDesc(d.typ("ollama", "slots")))
			o.bad = true
		}
	default:
		return false
	}
	return true
}

// apply puts [ollama] host and slots into c as the one [[ollama.hosts]] table they
// meant, checked as strictly as they were; with [[ollama.hosts]] in the file too they
// are unused, and said so.
func (o *oldKeys) apply(c *Config, d *decoder) {
	if o.hostLine == 0 && o.slotsLine == 0 || o.bad {
		return
	}
	line := o.hostLine
	if line == 0 {
		line = o.slotsLine
	}
	if d.lines["ollama.hosts"] > 0 {
		d.note(line, "ollama.host", "unused: [[ollama.hosts]] is set, so calls go to its hosts only; add %s there, or remove ollama.host and ollama.slots", o.host)
		return
	}
	h := c.Ollama.Hosts[0]
	if o.hostLine > 0 {
		if msg := checkURL(o.host); msg != "" {
			d.problem(o.hostLine, "ollama.host", "%s", msg)
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
	c.Ollama.Hosts = []OllamaHost{h}
	d.lines["ollama.hosts.1"] = line
	d.note(line, "ollama.host", "[ollama] host and slots are the old form of one [[ollama.hosts]] table: "+
		"write an [[ollama.hosts]] table with url = %q and slots = %d instead", h.URL, h.Slots)
}

func (d *decoder) note(line int, key, format string, args ...any) {
	d.notes = append(d.notes, Problem{Line: line, Key: key, Msg: fmt.Sprintf(format, args...)})
}
