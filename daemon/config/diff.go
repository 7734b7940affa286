package config

import (
	"reflect"
	"sort"
	"strings"
)

// Changes lists the keys whose values differ between old and new, dotted as in the file
// ("ollama.model", "agents.NAME.allow"), sorted. A [agents.NAME] table added or removed is
// "agents.NAME"; an array of tables ([[mcp.servers]]) or a table of tables inside a
// section ([slack.channels.ID]) is one key. The flag-only settings are "state_dir" and
// "socket". A reload uses it to tell what it applied and what needs a restart; it walks
// the struct's toml tags, so a section added later is covered without a change here.
func Changes(old, new *Config) []string {
	var out []string
	a, b := reflect.ValueOf(old).Elem(), reflect.ValueOf(new).Elem()
	for i := range a.NumField() {
		f := a.Type().Field(i)
		name := f.Tag.Get("toml")
		if name == "-" {
			name = snake(f.Name)
		}
		if name == "" {
			continue
		}
		out = append(out, changedIn(name, a.Field(i), b.Field(i))...)
	}
	sort.Strings(out)
	return out
}

// changedIn compares one value: a struct key by key, a map of structs name by name and
// key by key, anything else as a whole.
func changedIn(key string, a, b reflect.Value) []string {
	switch {
	case a.Kind() == reflect.Struct && a.Type() != durationType:
		var out []string
		for i := range a.NumField() {
			tag := a.Type().Field(i).Tag.Get("toml")
			if tag == "" || tag == "-" {
				continue
			}
			fa, fb := a.Field(i), b.Field(i)
			if fa.Kind() == reflect.Map && fa.Type().Elem().Kind() == reflect.Struct {
				// A table of tables inside a section ([slack.channels.ID]): one key.
				if !same(fa, fb) {
					out = append(out, key+"."+tag)
				}
				continue
			}
			out = append(out, changedIn(key+"."+tag, fa, fb)...)
		}
		return out
	case a.Kind() == reflect.Map && a.Type().Elem().Kind() == reflect.Struct:
		var out []string
		names := map[string]bool{}
		for _, k := range a.MapKeys() {
			names[k.String()] = true
		}
		for _, k := range b.MapKeys() {
			names[k.String()] = true
		}
		for _, n := range sortedKeys(names) {
			va, vb := a.MapIndex(reflect.ValueOf(n)), b.MapIndex(reflect.ValueOf(n))
			if !va.IsValid() || !vb.IsValid() {
				out = append(out, key+"."+n)
				continue
			}
			out = append(out, changedIn(key+"."+n, va, vb)...)
		}
		return out
	case !same(a, b):
		return []string{key}
	}
	return nil
}

// same compares two values, an empty list or table being the same as none: the defaults
// use [] where a file may leave a key out.
func same(a, b reflect.Value) bool {
	empty := func(v reflect.Value) bool {
		return (v.Kind() == reflect.Slice || v.Kind() == reflect.Map) && v.Len() == 0
	}
	if empty(a) && empty(b) {
		return true
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

// snake turns a Go field name into a key: StateDir → state_dir.
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
