package kube

import (
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/palsched/pal/internal/quote"
)

// maxConfigBytes bounds what LoadConfig reads: a scheduler config is a
// page of keys, and a larger file is a mistake (or an attack) to refuse
// before parsing it.
const maxConfigBytes = 1 << 20

var yamlLineRE = regexp.MustCompile(`^line (\d+): (.*)$`)

// configFile is a scheduler config's YAML tree, kept so that an error can
// name the line of the key it is about: the decoder the config uses
// (sigs.k8s.io/yaml, which goes through JSON like the Kubernetes API
// machinery) reports neither lines nor, for a bad value, always the key.
type configFile struct {
	path string
	root *yaml3.Node // the document's top mapping; nil for an empty file
}

// parseConfigFile reads the tree and checks every key against Config's
// fields and every value against its field's type, one key at a time, so
// that the first error names file, line and dotted field.
func parseConfigFile(path string, b []byte) (*configFile, error) {
	f := &configFile{path: path}
	if len(b) > maxConfigBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d a config may have", path, len(b), maxConfigBytes)
	}
	var doc yaml3.Node
	if err := yaml3.Unmarshal(b, &doc); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
			return nil, fmt.Errorf("%s:%s: %s", path, m[1], m[2])
		}
		return nil, fmt.Errorf("%s: %s", path, msg)
	}
	if len(doc.Content) == 0 {
		return f, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml3.MappingNode {
		return nil, fmt.Errorf("%s:%d: the config must be a mapping of keys (schedulerName: ..., period: ...)", path, root.Line)
	}
	f.root = root
	return f, f.check(root, reflect.TypeOf(Config{}), "")
}

// check walks one mapping against the struct type t.
func (f *configFile) check(m *yaml3.Node, t reflect.Type, prefix string) error {
	fields := jsonFields(t)
	for k := 0; k+1 < len(m.Content); k += 2 {
		key, val := m.Content[k], m.Content[k+1]
		name := prefix + key.Value
		sf, ok := fields[key.Value]
		if !ok {
			known := make([]string, 0, len(fields))
			for n := range fields {
				known = append(known, n)
			}
			slices.Sort(known)
			return fmt.Errorf("%s:%d: field %s: unknown (known here: %s)", f.path, key.Line, quote.Value(name), strings.Join(known, ", "))
		}
		ft := sf.Type
		if ft.Kind() == reflect.Struct && !isScalarStruct(ft) {
			if val.Kind != yaml3.MappingNode {
				return fmt.Errorf("%s:%d: field %s: want a mapping of keys", f.path, val.Line, quote.Value(name))
			}
			if err := f.check(val, ft, name+"."); err != nil {
				return err
			}
			continue
		}
		if val.Kind == yaml3.ScalarNode && val.Tag == "!!null" {
			// The decoder leaves a field given null at its default: a
			// value forgotten would run as the default, unsaid.
			return fmt.Errorf("%s:%d: field %s: no value (leave the key out to keep its default)", f.path, val.Line, quote.Value(name))
		}
		// Decode the value alone into its field's type, exactly as the
		// whole file is decoded.
		one, err := yaml3.Marshal(val)
		if err != nil {
			return fmt.Errorf("%s:%d: field %s: %v", f.path, val.Line, quote.Value(name), err)
		}
		if err := yaml.UnmarshalStrict(one, reflect.New(ft).Interface()); err != nil {
			return fmt.Errorf("%s:%d: field %s: %s", f.path, val.Line, quote.Value(name), plainDecodeError(err, ft))
		}
	}
	return nil
}

// isScalarStruct: a struct that reads itself from one value (Duration).
func isScalarStruct(t reflect.Type) bool {
	_, ok := reflect.New(t).Interface().(interface{ UnmarshalJSON([]byte) error })
	return ok
}

// jsonFields maps the json names of t's fields (embedded ones included)
// to their fields.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct {
			for n, f := range jsonFields(sf.Type) {
				out[n] = f
			}
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" || !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		out[name] = sf
	}
	return out
}

// plainDecodeError says what a value should have been, without the JSON
// decoder's wording (the file is YAML; Go type names mean nothing to an
// operator).
func plainDecodeError(err error, t reflect.Type) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, "json: "); i >= 0 {
		msg = msg[i+len("json: "):]
	}
	msg = strings.TrimPrefix(msg, "error unmarshaling JSON: while decoding JSON: ")
	if strings.HasPrefix(msg, "cannot unmarshal") {
		want := map[reflect.Kind]string{
			reflect.Bool: "true or false", reflect.String: "a string",
			reflect.Int: "an integer", reflect.Int64: "an integer", reflect.Uint64: "a non-negative integer",
			reflect.Float32: "a number", reflect.Float64: "a number", reflect.Slice: "a list",
		}[t.Kind()]
		if want != "" {
			return "want " + want
		}
	}
	return msg
}

// line is the line of the dotted key (themis.lease) in the file, 0 when
// the file does not set it (its default was used). A last key with an
// index (dcgm.urls[1]) is that item's line.
func (f *configFile) line(dotted string) int {
	if f == nil || f.root == nil {
		return 0
	}
	m := f.root
	parts := strings.Split(dotted, ".")
	idx := -1
	if last, n, ok := strings.Cut(parts[len(parts)-1], "["); ok {
		if _, err := fmt.Sscanf(n, "%d]", &idx); err != nil {
			idx = -1
		}
		parts[len(parts)-1] = last
	}
	for i, p := range parts {
		var next *yaml3.Node
		for k := 0; k+1 < len(m.Content); k += 2 {
			if m.Content[k].Value == p {
				if i == len(parts)-1 {
					if v := m.Content[k+1]; idx >= 0 && v.Kind == yaml3.SequenceNode && idx < len(v.Content) {
						return v.Content[idx].Line
					}
					return m.Content[k].Line
				}
				next = m.Content[k+1]
				break
			}
		}
		if next == nil || next.Kind != yaml3.MappingNode {
			return 0
		}
		m = next
	}
	return 0
}

// locate puts file and line in front of a Validate error ("field X: ..."
// or "fields X and Y: ..."), at the first named key the file sets.
func (f *configFile) locate(err error) error {
	msg := err.Error()
	rest, ok := strings.CutPrefix(msg, "field ")
	if !ok {
		rest, ok = strings.CutPrefix(msg, "fields ")
	}
	if ok {
		names, _, _ := strings.Cut(rest, ":")
		for _, n := range strings.Fields(strings.ReplaceAll(names, ",", " ")) {
			if l := f.line(n); l > 0 {
				return fmt.Errorf("%s:%d: %v", f.path, l, err)
			}
		}
	}
	return fmt.Errorf("%s: %v", f.path, err)
}

// readBounded reads at most limit+1 bytes of path, so that a huge file
// (or /dev/zero) costs bounded memory; parseConfigFile refuses the extra.
func readBounded(path string, limit int64) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return io.ReadAll(io.LimitReader(fh, limit+1))
}
