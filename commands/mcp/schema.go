package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentd/agentd/commands"
)

// Limits of the conversion. A tool's schema goes into every prompt that offers the tool,
// and $ref can expand a small document into a huge tree, so both depth and size are bounded.
const (
	maxSchemaDepth   = 8
	maxSchemaNodes   = 300
	maxDescription   = 100 // a command's description, in runes
	maxPropertyDesc  = 200 // a property's description, in runes
	maxCommandName   = 64
	stringDefaultMax = commands.DefaultMaxLength
)

// convertSchema turns a tool's input schema into the params of its command: the subset
// agentd's grammar supports (object, properties, required, string, integer, number, boolean,
// array, enum, const, description, and the bounds), with additionalProperties false on every
// object and a maxLength on every string. Keywords outside the subset (format, pattern,
// default, title, …) are dropped: the server still validates the call. Local $ref, a
// single-member allOf and anyOf/oneOf with a null member (an optional value) are unfolded.
//
// The error says why the schema cannot be used; dropped lists the optional properties left
// out because they could not be converted.
//
// Properties come out in the order of the schema's required list, then the rest by name:
// the client receives the schema as a Go map, so the server's own order is lost, and the
// required list is the only order the wire keeps.
func convertSchema(in any) (params *commands.Schema, dropped []string, err error) {
	if raw, ok := in.(json.RawMessage); ok {
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, nil, fmt.Errorf("input schema is not valid JSON: %v", err)
		}
	}
	if in == nil {
		return commands.Object(), nil, nil
	}
	root, ok := in.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("input schema is %s, not an object schema", commands.KindOf(in))
	}
	c := &converter{root: root, active: map[string]bool{}}
	m, _, err := c.unfold("$", root)
	if err != nil {
		return nil, nil, err
	}
	if t, _ := m["type"].(string); t != "" && t != "object" {
		return nil, nil, fmt.Errorf("input schema has type %q; a tool's arguments must be an object", t)
	}
	s, err := c.object("$", m, 0, true)
	if err != nil {
		return nil, nil, err
	}
	s.Description = "" // the command's description says what the tool does
	// Every bound was clamped, so this only guards against a mistake here.
	if err := s.CheckGrammarLimits(); err != nil {
		return nil, nil, err
	}
	return s, c.dropped, nil
}

type converter struct {
	root    map[string]any
	active  map[string]bool // $refs being expanded, to refuse recursion
	nodes   int
	dropped []string
}

// node converts one schema found at path.
func (c *converter) node(path string, v any, depth int) (*commands.Schema, error) {
	if c.nodes++; c.nodes > maxSchemaNodes {
		return nil, fmt.Errorf("%w (over %d nodes)", errTooLarge, maxSchemaNodes)
	}
	if depth > maxSchemaDepth {
		return nil, fmt.Errorf("%s: nested deeper than %d levels", path, maxSchemaDepth)
	}
	m, ok := v.(map[string]any)
	if !ok {
		if b, isBool := v.(bool); isBool && b {
			return nil, fmt.Errorf("%s: accepts any value; only typed values are supported", path)
		}
		return nil, fmt.Errorf("%s: %s is not a schema", path, commands.KindOf(v))
	}
	m, refs, err := c.unfold(path, m)
	if err != nil {
		return nil, err
	}
	defer c.release(refs)
	if alts, ok := firstList(m, "anyOf", "oneOf"); ok {
		return c.alternatives(path, m, alts, depth)
	}
	typ, err := typeOf(path, m)
	if err != nil {
		return nil, err
	}
	var s *commands.Schema
	switch typ {
	case "object":
		s, err = c.object(path, m, depth, false)
	case "string":
		s = stringSchema(m)
	case "integer", "number":
		s = &commands.Schema{Type: typ, Minimum: number(m["minimum"]), Maximum: number(m["maximum"])}
	case "boolean":
		s = &commands.Schema{Type: typ}
	case "array":
		s, err = c.array(path, m, depth)
	default:
		return nil, fmt.Errorf("%s: type %q is not supported", path, typ)
	}
	if err != nil {
		return nil, err
	}
	if d, _ := m["description"].(string); d != "" {
		s.Description = oneLine(d, maxPropertyDesc)
	}
	return s, nil
}

// unfold replaces a local $ref by its target and merges a single-member allOf, keeping
// the sibling keywords (a description beside a $ref wins over the target's). The refs it
// followed stay marked active, to refuse recursion, until the caller calls release.
func (c *converter) unfold(path string, m map[string]any) (map[string]any, []string, error) {
	var refs []string
	for range 2 * maxSchemaDepth {
		if all, ok := m["allOf"].([]any); ok {
			if len(all) != 1 {
				c.release(refs)
				return nil, nil, fmt.Errorf("%s: allOf with %d members is not supported", path, len(all))
			}
			inner, ok := all[0].(map[string]any)
			if !ok {
				c.release(refs)
				return nil, nil, fmt.Errorf("%s: allOf member is not a schema", path)
			}
			m = merge(inner, without(m, "allOf"))
			continue
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return m, refs, nil
		}
		if c.active[ref] {
			c.release(refs)
			return nil, nil, fmt.Errorf("%s: recursive $ref %q is not supported", path, ref)
		}
		target, err := c.resolve(ref)
		if err != nil {
			c.release(refs)
			return nil, nil, fmt.Errorf("%s: %v", path, err)
		}
		c.active[ref] = true
		refs = append(refs, ref)
		m = merge(target, without(m, "$ref")) // a $ref in the target is followed next
	}
	c.release(refs)
	return nil, nil, fmt.Errorf("%s: $ref or allOf chain too long", path)
}

func (c *converter) release(refs []string) {
	for _, r := range refs {
		delete(c.active, r)
	}
}

// resolve finds a local reference: #/$defs/Name or #/definitions/Name.
func (c *converter) resolve(ref string) (map[string]any, error) {
	for _, prefix := range []string{"#/$defs/", "#/definitions/"} {
		name, ok := strings.CutPrefix(ref, prefix)
		if !ok || strings.Contains(name, "/") {
			continue
		}
		name = strings.NewReplacer("~1", "/", "~0", "~").Replace(name)
		defs, _ := c.root[strings.Trim(prefix[1:], "/")].(map[string]any)
		if target, ok := defs[name].(map[string]any); ok {
			return target, nil
		}
		return nil, fmt.Errorf("$ref %q points nowhere", ref)
	}
	return nil, fmt.Errorf("$ref %q is not supported (only #/$defs/NAME and #/definitions/NAME)", ref)
}

// alternatives handles anyOf/oneOf: null members go (every optional value may be left
// out instead); one member left is the schema itself, several become anyOf.
func (c *converter) alternatives(path string, m map[string]any, alts []any, depth int) (*commands.Schema, error) {
	var kept []map[string]any
	for _, a := range alts {
		am, ok := a.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: anyOf member is not a schema", path)
		}
		if t, _ := am["type"].(string); t == "null" {
			continue
		}
		kept = append(kept, am)
	}
	rest := without(m, "anyOf", "oneOf")
	switch len(kept) {
	case 0:
		return nil, fmt.Errorf("%s: only null is allowed", path)
	case 1:
		return c.node(path, merge(kept[0], rest), depth)
	}
	s := &commands.Schema{}
	for i, a := range kept {
		alt, err := c.node(fmt.Sprintf("%s(anyOf %d)", path, i), merge(a, without(rest, "description")), depth+1)
		if err != nil {
			return nil, err
		}
		s.AnyOf = append(s.AnyOf, alt)
	}
	if d, _ := m["description"].(string); d != "" {
		s.Description = oneLine(d, maxPropertyDesc)
	}
	return s, nil
}

// object converts an object schema. Nested objects need declared properties: a free-form
// map cannot be written under additionalProperties false.
func (c *converter) object(path string, m map[string]any, depth int, top bool) (*commands.Schema, error) {
	props, _ := m["properties"].(map[string]any)
	if len(props) == 0 && !top {
		return nil, fmt.Errorf("%s: an object without declared properties is not supported", path)
	}
	required := map[string]bool{}
	var order []string
	if list, ok := m["required"].([]any); ok {
		for _, r := range list {
			if name, ok := r.(string); ok && props[name] != nil && !required[name] {
				required[name] = true
				order = append(order, name)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		if !required[name] {
			order = append(order, name)
		}
	}

	s := &commands.Schema{Type: "object", AdditionalProperties: commands.Ptr(false), Required: []string{}}
	for _, name := range order {
		p := path + "." + name
		ps, err := c.node(p, props[name], depth+1)
		if err != nil {
			if required[name] || errors.Is(err, errTooLarge) {
				return nil, err
			}
			c.dropped = append(c.dropped, err.Error()) // err names the property
			continue
		}
		s.Properties = append(s.Properties, commands.Prop{Name: name, Schema: ps})
		if required[name] {
			s.Required = append(s.Required, name)
		}
	}
	return s, nil
}

var errTooLarge = errors.New("schema too large")

func (c *converter) array(path string, m map[string]any, depth int) (*commands.Schema, error) {
	items, ok := m["items"]
	if !ok {
		return nil, fmt.Errorf("%s: an array without items is not supported", path)
	}
	it, err := c.node(path+"[]", items, depth+1)
	if err != nil {
		return nil, err
	}
	s := &commands.Schema{Type: "array", Items: it, MinItems: count(m["minItems"])}
	if n := count(m["maxItems"]); n != nil {
		s.MaxItems = commands.Ptr(min(*n, commands.MaxGrammarRepetitions))
	}
	return s, nil
}

// stringSchema keeps enum and const (string values only) and bounds the length.
func stringSchema(m map[string]any) *commands.Schema {
	s := &commands.Schema{Type: "string"}
	if list, ok := m["enum"].([]any); ok && len(list) > 0 {
		for _, e := range list {
			str, ok := e.(string)
			if !ok {
				s.Enum = nil
				break
			}
			s.Enum = append(s.Enum, str)
		}
	}
	if k, ok := m["const"].(string); ok {
		s.Const = commands.Ptr(k)
	}
	if len(s.Enum) > 0 || s.Const != nil {
		return s // the choices bound the length
	}
	n := stringDefaultMax
	if max := count(m["maxLength"]); max != nil {
		n = min(*max, commands.MaxGrammarRepetitions)
	}
	s.MaxLength = commands.Ptr(n)
	return s
}

// typeOf finds the one type of a schema: "type" (a list may add "null"), else what its
// keywords imply.
func typeOf(path string, m map[string]any) (string, error) {
	switch t := m["type"].(type) {
	case string:
		if t == "null" {
			return "", fmt.Errorf("%s: only null is allowed", path)
		}
		return t, nil
	case []any:
		var types []string
		for _, e := range t {
			if s, ok := e.(string); ok && s != "null" {
				types = append(types, s)
			}
		}
		if len(types) != 1 {
			return "", fmt.Errorf("%s: type %v is not supported; want one type", path, t)
		}
		return types[0], nil
	case nil:
	default:
		return "", fmt.Errorf("%s: type is %s, not a string", path, commands.KindOf(t))
	}
	switch {
	case m["properties"] != nil:
		return "object", nil
	case m["items"] != nil:
		return "array", nil
	case m["const"] != nil || m["enum"] != nil:
		if _, ok := m["const"].(string); ok || allStrings(m["enum"]) {
			return "string", nil
		}
	}
	return "", fmt.Errorf("%s: no type; only typed values are supported", path)
}

// count reads a non-negative integer keyword; nil when absent or not one.
func count(v any) *int {
	f := number(v)
	if f == nil || *f < 0 || *f != math.Trunc(*f) || *f > math.MaxInt32 {
		return nil
	}
	return commands.Ptr(int(*f))
}

// number reads a numeric keyword as decoded by encoding/json (float64 or json.Number).
func number(v any) *float64 {
	switch n := v.(type) {
	case float64:
		return &n
	case json.Number:
		if f, err := n.Float64(); err == nil {
			return &f
		}
	case int:
		return commands.Ptr(float64(n))
	}
	return nil
}

func allStrings(v any) bool {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return false
	}
	for _, e := range list {
		if _, ok := e.(string); !ok {
			return false
		}
	}
	return true
}

func firstList(m map[string]any, keys ...string) ([]any, bool) {
	for _, k := range keys {
		if l, ok := m[k].([]any); ok {
			return l, true
		}
	}
	return nil, false
}

// merge returns base overlaid with over; neither is changed.
func merge(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

func without(m map[string]any, keys ...string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

// commandName makes `server.tool` from a tool's name: snake_case, then anything outside
// [a-z0-9_.-] becomes _. It returns "" when nothing usable is left.
func commandName(server, tool string) string {
	var b strings.Builder
	rs := []rune(tool)
	for i, r := range rs {
		if unicode.IsUpper(r) && i > 0 {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				b.WriteByte('_')
			}
		}
		r = unicode.ToLower(r)
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	name := b.String()
	for strings.Contains(name, "__") {
		name = strings.ReplaceAll(name, "__", "_")
	}
	name = strings.Trim(name, "_.-")
	if name == "" {
		return ""
	}
	full := server + "." + name
	if len(full) > maxCommandName {
		full = strings.TrimRight(full[:maxCommandName], "_.-")
	}
	return full
}

// oneLine keeps the first line of s, with runs of space collapsed, cut to max runes.
func oneLine(s string, max int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	cut := string(r[:max-1])
	if i := strings.LastIndexByte(cut, ' '); i > max/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:.-") + "…"
}
