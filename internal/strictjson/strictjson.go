// Package strictjson decodes the JSON configs of gdattn strictly: an
// unknown key (matched exactly: encoding/json alone would accept "D" for
// "d"), a value of the wrong type or trailing data is an error that names
// it, so that a misspelt key in a config file is never silently ignored.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// Decode unmarshals data into v (a pointer, as for json.Unmarshal),
// refusing unknown keys and anything after the first value. If v points to
// a struct, the keys of the top-level object must match its fields' JSON
// names (tags, or else field names, embedded structs included) exactly;
// nested objects are checked by their own UnmarshalJSON.
//
// Keys of nested objects that decode into structs (fields, slice and array
// elements, map values, pointers) must match exactly too, down to a type
// with its own UnmarshalJSON, which checks its own keys. A key given twice
// in one object, at any level, is an error (encoding/json keeps the last).
func Decode(data []byte, v any) error {
	if err := noDuplicates(data); err != nil {
		return err
	}
	if rt := reflect.TypeOf(v); rt != nil && rt.Kind() == reflect.Pointer {
		if err := checkKeys(data, rt.Elem(), 0); err != nil {
			return err
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			f := te.Field
			if i := strings.LastIndex(f, "."); i >= 0 {
				f = f[i+1:]
			}
			return fmt.Errorf("key %q: %s value, want %v", f, te.Value, te.Type)
		}
		return err
	}
	if rest := bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n"); len(rest) > 0 { // JSON whitespace only
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

// unmarshalerType is json.Unmarshaler.
var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// maxTypeDepth bounds checkKeys' recursion (a recursive type would
// otherwise follow deep JSON as deep as it goes).
const maxTypeDepth = 64

// checkKeys checks that every object in data that decodes into a struct
// has only keys matching the struct's fields exactly, recursing as the
// type t does. Values that do not parse as t expects are left to the
// decoder, which reports them.
func checkKeys(data []byte, t reflect.Type, depth int) error {
	if depth > maxTypeDepth {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		var keys map[string]json.RawMessage
		if json.Unmarshal(data, &keys) != nil {
			return nil
		}
		fields := map[string]reflect.Type{}
		fieldTypes(t, fields)
		names := make([]string, 0, len(keys))
		for k := range keys {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			ft, ok := fields[k]
			if !ok {
				return fmt.Errorf("unknown key %q", k)
			}
			if err := checkKeys(keys[k], ft, depth+1); err != nil {
				if strings.HasPrefix(err.Error(), "[") {
					return fmt.Errorf("key %q%w", k, err)
				}
				return fmt.Errorf("key %q: %w", k, err)
			}
		}
	case reflect.Slice, reflect.Array:
		var elems []json.RawMessage
		if json.Unmarshal(data, &elems) != nil {
			return nil
		}
		for i, e := range elems {
			if err := checkKeys(e, t.Elem(), depth+1); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
	case reflect.Map:
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) != nil {
			return nil
		}
		names := make([]string, 0, len(m))
		for k := range m {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if err := checkKeys(m[k], t.Elem(), depth+1); err != nil {
				return fmt.Errorf("[%q]: %w", k, err)
			}
		}
	}
	return nil
}

// fieldTypes maps the JSON keys of struct type t to their field types.
func fieldTypes(t reflect.Type, out map[string]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name := strings.Split(tag, ",")[0]
		if tag == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				fieldTypes(ft, out)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, shadowed := out[name]; !shadowed || !f.Anonymous {
			out[name] = f.Type
		}
	}
}

// noDuplicates refuses a key given twice in one object of data, at any
// level, in one pass over its tokens. Syntax errors are left to the
// decoder.
func noDuplicates(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		object bool
		keys   map[string]bool
		key    bool // the next string token of an object is a key
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		top := len(stack) - 1
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{':
				if top >= 0 && stack[top].object {
					stack[top].key = true
				}
				stack = append(stack, frame{object: true, keys: map[string]bool{}, key: true})
			case '[':
				if top >= 0 && stack[top].object {
					stack[top].key = true
				}
				stack = append(stack, frame{})
			default:
				stack = stack[:top]
				if len(stack) == 0 {
					return nil
				}
			}
			continue
		}
		if top < 0 {
			return nil
		}
		if f := &stack[top]; f.object {
			if f.key {
				k := tok.(string)
				if f.keys[k] {
					return fmt.Errorf("duplicate key %q", k)
				}
				f.keys[k] = true
				f.key = false
			} else {
				f.key = true
			}
		}
	}
}
