package report

import (
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// configRows flattens the run's configuration for the page's table, by summary.json's names
// ("load.levels", "workload.input_tokens"): the known top-level fields first, then any other
// (so fields added to Summary show without a change here), minus the per-level results.
// Values read as summary.json writes them, walking the typed values by their JSON field
// names; values under a secret-looking name (load.extra_body is free-form) are redacted.
func configRows(s *Summary) ([]kv, error) {
	skip := map[string]bool{"levels": true, "sweet_spot": true, "slo_limit": true}
	order := []string{"llmbench_version", "schema", "started_at", "run_start_unix", "end_reason", "seed", "target", "workload", "load", "slo", "percentiles"}
	top := members(reflect.ValueOf(s).Elem())
	slices.SortStableFunc(top, func(a, b member) int {
		ia, ib := slices.Index(order, a.name), slices.Index(order, b.name)
		switch {
		case ia >= 0 && ib >= 0:
			return ia - ib
		case ia >= 0:
			return -1
		case ib >= 0:
			return 1
		}
		return 0 // members are sorted by name already
	})
	var rows []kv
	var err error
	for _, m := range top {
		if skip[m.name] {
			continue
		}
		if rows, err = flatten(rows, m.name, m.v); err != nil {
			return nil, fmt.Errorf("%s: %w", m.name, err)
		}
	}
	return rows, nil
}

// flatten appends the rows of value v at path prefix: a scalar as one row, an object's
// members each under prefix.name, a list of scalars (or of flat objects) on one row, any
// other list element by element (prefix[i]).
func flatten(rows []kv, prefix string, v reflect.Value) ([]kv, error) {
	v = indirect(v)
	if !v.IsValid() {
		return append(rows, kv{prefix, "null"}), nil
	}
	text, ok, err := scalar(v)
	if err != nil {
		return nil, err
	}
	if ok {
		if text == "" {
			text = "—"
		}
		return append(rows, kv{prefix, text}), nil
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		parts := make([]string, 0, v.Len())
		for i := range v.Len() {
			text, ok, err := scalar(v.Index(i))
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			parts = append(parts, text)
		}
		if len(parts) == v.Len() {
			return append(rows, kv{prefix, strings.Join(parts, ", ")}), nil
		}
		flat, err := flatObjects(v)
		if err != nil {
			return nil, err
		}
		if flat != "" {
			return append(rows, kv{prefix, flat}), nil
		}
		for i := range v.Len() {
			if rows, err = flatten(rows, prefix+"["+strconv.Itoa(i)+"]", v.Index(i)); err != nil {
				return nil, err
			}
		}
		return rows, nil
	}
	ms := members(v)
	if len(ms) == 0 {
		return append(rows, kv{prefix, "{}"}), nil
	}
	for _, m := range ms {
		if rows, err = flatten(rows, prefix+"."+m.name, m.v); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// flatObjects renders a list of flat objects (a ladder's levels) on one line,
// "concurrency=1 requests=200; concurrency=4 requests=200"; "" when an element is not an
// object or has a member that is not a scalar.
func flatObjects(list reflect.Value) (string, error) {
	parts := make([]string, 0, list.Len())
	for i := range list.Len() {
		e := indirect(list.Index(i))
		if !e.IsValid() || (e.Kind() != reflect.Struct && e.Kind() != reflect.Map) {
			return "", nil
		}
		ms := members(e)
		fields := make([]string, 0, len(ms))
		for _, m := range ms {
			text, ok, err := scalar(m.v)
			if err != nil || !ok {
				return "", err
			}
			fields = append(fields, m.name+"="+text)
		}
		parts = append(parts, strings.Join(fields, " "))
	}
	return strings.Join(parts, "; "), nil
}

// member is one member of an object as summary.json writes it: a struct field by its JSON
// name, or a map entry.
type member struct {
	name string
	v    reflect.Value
}

// members lists the members of a struct or map v by name, as encoding/json writes them
// (exported fields, tag names, omitempty, embedded structs inlined); a member whose name
// looks secret has its value, unless null or empty, replaced by "[redacted]".
func members(v reflect.Value) []member {
	var out []member
	switch v.Kind() {
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			out = append(out, member{fmt.Sprint(it.Key().Interface()), it.Value()})
		}
	case reflect.Struct:
		out = structFields(v, nil)
	}
	slices.SortFunc(out, func(a, b member) int { return strings.Compare(a.name, b.name) })
	for i, m := range out {
		if !secretKey.MatchString(m.name) {
			continue
		}
		if e := indirect(m.v); e.IsValid() && !(e.Kind() == reflect.String && (e.String() == "" || e.String() == redacted)) {
			out[i].v = reflect.ValueOf(redacted)
		}
	}
	return out
}

// structFields appends v's fields as encoding/json names them; a field of an embedded
// struct is left out when an outer field has its name.
func structFields(v reflect.Value, out []member) []member {
	var embedded []reflect.Value
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		fv := v.Field(i)
		if f.Anonymous && name == "" {
			if e := indirect(fv); e.IsValid() && e.Kind() == reflect.Struct {
				embedded = append(embedded, e)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if slices.Contains(strings.Split(opts, ","), "omitempty") && emptyValue(fv) {
			continue
		}
		out = append(out, member{name, fv})
	}
	for _, e := range embedded {
		for _, m := range structFields(e, nil) {
			if !slices.ContainsFunc(out, func(o member) bool { return o.name == m.name }) {
				out = append(out, m)
			}
		}
	}
	return out
}

// emptyValue is encoding/json's omitempty test.
func emptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}

// indirect follows pointers and interfaces; the zero Value for what summary.json writes as
// null (a nil pointer, interface, map or slice).
func indirect(v reflect.Value) reflect.Value {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	if v.IsValid() && (v.Kind() == reflect.Map || v.Kind() == reflect.Slice) && v.IsNil() {
		return reflect.Value{}
	}
	return v
}

var textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()

// scalar is v's text when summary.json writes it as a string, number, boolean or null
// (null as ""), strings unquoted, or, for a type with its own MarshalJSON, that JSON; false
// for an object or a list.
func scalar(v reflect.Value) (string, bool, error) {
	v = indirect(v)
	if !v.IsValid() {
		return "", true, nil
	}
	if v.Type().Implements(textMarshaler) && v.CanInterface() {
		b, err := v.Interface().(encoding.TextMarshaler).MarshalText()
		return string(b), err == nil, err
	}
	switch v.Kind() {
	case reflect.String:
		return v.String(), true, nil
	case reflect.Bool:
		return strconv.FormatBool(v.Bool()), true, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10), true, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(v.Uint(), 10), true, nil
	case reflect.Float32:
		return jsonFloat(v.Float(), 32), true, nil
	case reflect.Float64:
		return jsonFloat(v.Float(), 64), true, nil
	}
	if v.Type().Implements(reflect.TypeFor[json.Marshaler]()) && v.CanInterface() {
		b, err := v.Interface().(json.Marshaler).MarshalJSON()
		return string(b), err == nil, err
	}
	return "", false, nil
}

// jsonFloat formats f as encoding/json writes a float of the given bits: the shortest
// decimal that reads back as f, in exponent form only below 1e-6 or from 1e21 on.
func jsonFloat(f float64, bits int) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, bits) // JSON has none: summary.json cannot hold one
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (bits == 64 && (a < 1e-6 || a >= 1e21) || bits == 32 && (float32(a) < 1e-6 || float32(a) >= 1e21)) {
		format = 'e'
	}
	b := strconv.AppendFloat(nil, f, format, -1, bits)
	if format == 'e' { // 1e-07 -> 1e-7, as encoding/json writes it
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return string(b)
}
