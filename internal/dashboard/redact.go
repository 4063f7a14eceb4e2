// Copyright 2026 The KubeStellar Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package dashboard

import "reflect"

// redacted returns a deep copy of a page's data with every string in it
// (exported fields, elements, map keys and values, through pointers and
// interfaces) passed through replace. Pages are redacted before they are
// rendered because html/template escapes a credential in the context it
// lands in (a '+' of a token becomes &#43; in text, more in an attribute or
// a URL): a replacement in the rendered page would miss it. A field
// tagged redact:"-" is the dashboard's own (a CSRF token, the verbs) and
// kept: a short credential must not break the page's forms. The data
// itself is left alone.
func redacted(data any, replace func(string) string) any {
	v := reflect.ValueOf(data)
	if !v.IsValid() {
		return data
	}
	return redactValue(v, replace).Interface()
}

func redactValue(v reflect.Value, replace func(string) string) reflect.Value {
	switch v.Kind() {
	case reflect.String:
		out := reflect.New(v.Type()).Elem()
		out.SetString(replace(v.String()))
		return out
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		out.Set(v)
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() && f.Tag.Get("redact") != "-" {
				out.Field(i).Set(redactValue(v.Field(i), replace))
			}
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(redactValue(v.Index(i), replace))
		}
		return out
	case reflect.Array:
		out := reflect.New(v.Type()).Elem()
		for i := range v.Len() {
			out.Index(i).Set(redactValue(v.Index(i), replace))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(redactValue(it.Key(), replace), redactValue(it.Value(), replace))
		}
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(redactValue(v.Elem(), replace))
		return out
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type()).Elem()
		out.Set(redactValue(v.Elem(), replace))
		return out
	}
	return v
}
