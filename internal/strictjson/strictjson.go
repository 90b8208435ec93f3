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
	"strings"
)

// Decode unmarshals data into v (a pointer, as for json.Unmarshal),
// refusing unknown keys and anything after the first value. If v points to
// a struct, the keys of the top-level object must match its fields' JSON
// names (tags, or else field names, embedded structs included) exactly;
// nested objects are checked by their own UnmarshalJSON.
func Decode(data []byte, v any) error {
	if rt := reflect.TypeOf(v); rt != nil && rt.Kind() == reflect.Pointer && rt.Elem().Kind() == reflect.Struct {
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(data, &keys); err == nil {
			known := map[string]bool{}
			fieldKeys(rt.Elem(), known)
			for k := range keys {
				if !known[k] {
					return fmt.Errorf("unknown key %q", k)
				}
			}
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
	if rest := bytes.TrimSpace(data[dec.InputOffset():]); len(rest) > 0 {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

// fieldKeys adds the JSON keys of struct type t to known.
func fieldKeys(t reflect.Type, known map[string]bool) {
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
				fieldKeys(ft, known)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		known[name] = true
	}
}
