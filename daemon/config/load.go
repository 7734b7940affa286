package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/agentd/agentd/internal/display"
)

// Problem is one thing wrong with a config.
type Problem struct {
	Line int    // 1-based line in the file; 0 when unknown (a default, a flag)
	Key  string // the dotted key, like "ollama.model"; "" when Msg names it already
	Msg  string
}

func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Key != "" {
		b.WriteString(p.Key + ": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Error lists every problem found in a config; Load and Validate return it.
type Error struct {
	Path     string // the file, "" for a config not read from one
	Problems []Problem
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	if len(e.Problems) == 1 {
		b.WriteString(e.Problems[0].String())
		return b.String()
	}
	fmt.Fprintf(&b, "%d problems:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  " + p.String())
	}
	return b.String()
}

// Checker finds problems the config package cannot see by itself, such as command names
// only the daemon knows. Its problems name their Key; Load adds the line.
type Checker func(*Config) []Problem

// Load reads the config file at path over Default() and validates the result: the one
// loader, for a start, a reload and --check-config alike. Keys the file leaves out keep
// their defaults; an array given replaces the default array. An empty path means no
// file: the defaults alone. A file named but missing is an error, as is any unknown key,
// wrong type or bad value; all of them, and check's problems (nil checks nothing more),
// are reported together in an *Error, each at its key's line (a key that did not decode
// gets its decoding problem alone).
//
// It also returns the warnings: settings that are valid but, as written, do nothing
// (Config.Warnings), each at its key's line. They never make the config fail, and they
// come with the problems too, so one --check-config shows both.
//
// cmd/agentd passes its --config flag, or DefaultConfigPath() when that file exists.
func Load(path string, check Checker) (*Config, []Problem, error) {
	c := Default()
	var probs, notes []Problem
	lines := map[string]int{}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, fmt.Errorf("config: %w", err)
		}
		probs, notes, lines = c.decode(string(data))
	}
	if lines["ollama.host"] > 0 || lines["ollama.hosts"] > 0 {
		c.Ollama.HostFrom = HostFromConfig
	}
	failed := map[string]bool{}
	for _, p := range probs {
		failed[p.Key] = true
	}
	more := c.problems()
	if check != nil {
		more = append(more, check(c)...)
	}
	for _, p := range more {
		if !failed[p.Key] {
			p.Line = lines[p.Key]
			probs = append(probs, p)
		}
	}
	warns := notes
	for _, w := range c.Warnings() {
		if !failed[w.Key] {
			w.Line = lines[w.Key]
			warns = append(warns, w)
		}
	}
	sort.SliceStable(warns, func(i, j int) bool { return lineOrder(warns[i]) < lineOrder(warns[j]) })
	if len(probs) > 0 {
		sort.SliceStable(probs, func(i, j int) bool { return lineOrder(probs[i]) < lineOrder(probs[j]) })
		return nil, warns, &Error{Path: path, Problems: probs}
	}
	return c, warns, nil
}

// lineOrder sorts problems by line, those without one last.
func lineOrder(p Problem) int {
	if p.Line == 0 {
		return math.MaxInt
	}
	return p.Line
}

// decoder decodes one key at a time, so that every problem is found, not just the first.
type decoder struct {
	md     toml.MetaData
	fields map[string]map[string]reflect.Value // section → key → field of the Config
	tables map[string]reflect.Value            // top-level tables of named tables ([agents.NAME])
	lines  map[string]int                      // dotted key → line
	probs  []Problem
	notes  []Problem // warnings: old keys read in their new form
	old    oldKeys
	alias  map[string]string // a section's new name → the old one the file uses
}

// typ is the TOML type of the key at path, as the file spells it.
func (d *decoder) typ(path ...string) string {
	if old, ok := d.alias[path[0]]; ok {
		path = append([]string{old}, path[1:]...)
	}
	return d.md.Type(path...)
}

// decode sets c's fields from the TOML in data and returns the problems found, the
// warnings (old keys read in their new form) and the line of each key, for the problems
// Validate finds later.
func (c *Config) decode(data string) ([]Problem, []Problem, map[string]int) {
	var top map[string]toml.Primitive
	md, err := toml.Decode(data, &top)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return []Problem{{Line: pe.Position.Line, Msg: "invalid TOML: " + pe.Message}}, nil, nil
		}
		return []Problem{{Msg: "invalid TOML: " + err.Error()}}, nil, nil
	}
	d := &decoder{md: md, fields: c.fields(), tables: c.tables(), lines: map[string]int{}}
	d.renameWeb(top)
	for _, name := range sortedKeys(top) {
		d.section(name, top[name])
	}
	d.old.apply(c, d)
	sort.SliceStable(d.probs, func(i, j int) bool { return d.probs[i].Line < d.probs[j].Line })
	return d.probs, d.notes, d.lines
}

func (d *decoder) section(name string, prim toml.Primitive) {
	line := d.line(prim)
	if f, ok := d.tables[name]; ok {
		d.field([]string{name}, line, f, prim)
		return
	}
	typ := d.typ(name)
	var table map[string]toml.Primitive
	if typ == "Hash" || typ == "" { // "": a table made implicitly by dotted keys (a.b = 1)
		if err := d.md.PrimitiveDecode(prim, &table); err != nil {
			d.problem(line, name, "%v", err)
			return
		}
		if line == 0 {
			line = d.firstLine(table)
		}
	}
	keys, known := d.fields[name]
	switch {
	case !known && table != nil:
		d.problem(line, "", "unknown section [%s]%s", name, d.suggestSection(name))
		return
	case !known:
		d.problem(line, "", "unknown key %q%s", name, d.suggestKey("", name))
		return
	case table == nil:
		d.problem(line, name, "want a table ([%s]), got %s", name, typeDesc(typ))
		return
	}
	for _, key := range sortedKeys(table) {
		full := name + "." + key
		line := d.line(table[key])
		d.lines[full] = line
		f, ok := keys[key]
		switch {
		case d.old.read(d, full, line, table[key]):
		case !ok && d.typ(name, key) == "Hash":
			d.problem(line, "", "unknown section [%s]", full)
		case !ok:
			d.problem(line, "", "unknown key %q%s", full, d.suggestKey(name, key))
		default:
			d.field([]string{name, key}, line, f, table[key])
		}
	}
}

// field decodes one key into its field: a plain value, or a nested table — a struct, a
// map of structs by name ([agents.NAME]) or an array of tables ([[mcp.servers]]).
func (d *decoder) field(path []string, line int, f reflect.Value, prim toml.Primitive) {
	full := strings.Join(path, ".")
	got := d.typ(path...)
	switch t := f.Type(); {
	case t.Kind() == reflect.Map && t.Elem().Kind() == reflect.Struct:
		var table map[string]toml.Primitive
		// "" is a table made implicitly, by [agents.NAME] headers alone.
		if (got != "Hash" && got != "") || d.md.PrimitiveDecode(prim, &table) != nil {
			d.problem(line, full, "want a table of named tables, like [%s.NAME], got %s", full, typeDesc(got))
			return
		}
		m := reflect.MakeMap(t)
		for _, name := range sortedKeys(table) {
			v := reflect.New(t.Elem()).Elem()
			sub := append(append([]string{}, path...), name)
			d.lines[strings.Join(sub, ".")] = d.line(table[name])
			if d.structTable(sub, v, table[name]) {
				m.SetMapIndex(reflect.ValueOf(name), v)
			}
		}
		f.Set(m)
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		var tables []map[string]toml.Primitive
		if got != "ArrayHash" || d.md.PrimitiveDecode(prim, &tables) != nil {
			d.problem(line, full, "want an array of tables, like [[%s]], got %s", full, typeDesc(got))
			return
		}
		s := reflect.MakeSlice(t, len(tables), len(tables))
		for i, tab := range tables {
			sub := append(append([]string{}, path...), fmt.Sprint(i+1))
			d.lines[strings.Join(sub, ".")] = d.firstLine(tab)
			d.structFields(sub, s.Index(i), tab, line)
		}
		f.Set(s)
	default:
		d.value(full, line, f, prim)
	}
}

// structTable decodes a table into the struct v, key by key; it reports whether prim was a table.
func (d *decoder) structTable(path []string, v reflect.Value, prim toml.Primitive) bool {
	full := strings.Join(path, ".")
	line := d.line(prim)
	var table map[string]toml.Primitive
	if got := d.typ(path...); (got != "Hash" && got != "") || d.md.PrimitiveDecode(prim, &table) != nil {
		d.problem(line, full, "want a table, got %s", typeDesc(got))
		return false
	}
	d.structFields(path, v, table, line)
	return true
}

// structFields decodes the keys of table into the struct v by their toml tags.
func (d *decoder) structFields(path []string, v reflect.Value, table map[string]toml.Primitive, line int) {
	fields := map[string]reflect.Value{}
	var names []string
	for i := range v.NumField() {
		if tag := v.Type().Field(i).Tag.Get("toml"); tag != "" && tag != "-" {
			fields[tag] = v.Field(i)
			names = append(names, tag)
		}
	}
	for _, key := range sortedKeys(table) {
		sub := append(append([]string{}, path...), key)
		full := strings.Join(sub, ".")
		kl := d.line(table[key])
		if kl == 0 {
			kl = line
		}
		d.lines[full] = kl
		f, ok := fields[key]
		if !ok {
			hint := ""
			if best := display.Closest(key, names); best != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", strings.Join(path, ".")+"."+best)
			}
			d.problem(kl, "", "unknown key %q%s", full, hint)
			continue
		}
		d.fieldIn(sub, kl, f, table[key])
	}
}

// fieldIn is field for a key inside an array of tables, whose path MetaData cannot type
// by index: plain values are checked by decoding alone.
func (d *decoder) fieldIn(path []string, line int, f reflect.Value, prim toml.Primitive) {
	if _, err := strconv.Atoi(path[len(path)-2]); err != nil {
		d.field(path, line, f, prim)
		return
	}
	full := strings.Join(path, ".")
	want, _ := expect(f.Type())
	if err := d.md.PrimitiveDecode(prim, f.Addr().Interface()); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			d.problem(line, full, "%s", pe.Message)
			return
		}
		d.problem(line, full, "want %s", want)
	}
}

// value decodes one key into its field, checking the TOML type first so the message can
// say what was expected.
func (d *decoder) value(key string, line int, f reflect.Value, prim toml.Primitive) {
	want, wantType := expect(f.Type())
	got := d.typ(strings.Split(key, ".")...)
	if got != wantType {
		d.problem(line, key, "want %s, got %s", want, typeDesc(got))
		return
	}
	err := d.md.PrimitiveDecode(prim, f.Addr().Interface())
	var pe toml.ParseError
	switch {
	case err == nil:
	case errors.As(err, &pe):
		d.problem(line, key, "%s", pe.Message)
	default:
		d.problem(line, key, "want %s", want)
	}
}

func (d *decoder) problem(line int, key, format string, args ...any) {
	d.probs = append(d.probs, Problem{Line: line, Key: key, Msg: fmt.Sprintf(format, args...)})
}

// lineProbe fails on purpose: toml reports an Unmarshaler's error at the line of the key
// being decoded, and MetaData has no other way to tell where a key is.
type lineProbe struct{}

func (lineProbe) UnmarshalTOML(any) error { return errors.New("probe") }

// firstLine returns the line of a table's first key, for a table with no header line.
func (d *decoder) firstLine(table map[string]toml.Primitive) int {
	first := 0
	for _, prim := range table {
		if l := d.line(prim); l > 0 && (first == 0 || l < first) {
			first = l
		}
	}
	return first
}

func (d *decoder) line(prim toml.Primitive) int {
	var pe toml.ParseError
	if errors.As(d.md.PrimitiveDecode(prim, &lineProbe{}), &pe) {
		return pe.Position.Line
	}
	return 0
}

// fields maps each section and key of the file to the Config field it sets, from the
// toml tags, so the struct is the only list of keys.
func (c *Config) fields() map[string]map[string]reflect.Value {
	out := map[string]map[string]reflect.Value{}
	top := reflect.ValueOf(c).Elem()
	for i := range top.NumField() {
		name := top.Type().Field(i).Tag.Get("toml")
		if name == "" || name == "-" {
			continue
		}
		sec := top.Field(i)
		if sec.Kind() != reflect.Struct {
			continue // a table of named tables: see tables
		}
		out[name] = map[string]reflect.Value{}
		for j := range sec.NumField() {
			if key := sec.Type().Field(j).Tag.Get("toml"); key != "" && key != "-" {
				out[name][key] = sec.Field(j)
			}
		}
	}
	return out
}

// tables maps the top-level tables of named tables to their Config fields.
func (c *Config) tables() map[string]reflect.Value {
	out := map[string]reflect.Value{}
	top := reflect.ValueOf(c).Elem()
	for i := range top.NumField() {
		name := top.Type().Field(i).Tag.Get("toml")
		if name != "" && name != "-" && top.Field(i).Kind() == reflect.Map {
			out[name] = top.Field(i)
		}
	}
	return out
}

var (
	durationType = reflect.TypeOf(Duration{})
	sizeType     = reflect.TypeOf(Size(0))
)

// expect describes what a field takes, and the TOML type (as MetaData.Type names it)
// that carries it.
func expect(t reflect.Type) (desc, tomlType string) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == durationType:
		return `a duration like "90s"`, "String"
	case t == sizeType:
		return `a size like "2GiB"`, "String"
	case t.Kind() == reflect.String:
		return "a string", "String"
	case t.Kind() == reflect.Int, t.Kind() == reflect.Int64:
		return "a whole number", "Integer"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		return `an array of strings, like ["a", "b"]`, "Array"
	case t.Kind() == reflect.Bool:
		return "true or false", "Bool"
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String:
		return `a table of strings, like { NAME = "value" }`, "Hash"
	}
	panic("config: no TOML mapping for " + t.String())
}

// typeDesc names a TOML type as MetaData.Type reports it.
func typeDesc(t string) string {
	switch t {
	case "String":
		return "a string"
	case "Integer":
		return "a whole number"
	case "Float":
		return "a fractional number"
	case "Bool":
		return "a boolean"
	case "Array":
		return "an array"
	case "Hash":
		return "a table"
	case "ArrayHash":
		return "an array of tables"
	case "Datetime":
		return "a date"
	}
	return strings.ToLower(t)
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
