// Package jsonround writes JSON whose numbers read as the tables show them:
// a float computed as 316034.94 must not print as 316034.93999999994.
// Encoding rounds every number after marshalling, key by key, so callers
// keep their plain structs and maps, and key order is what encoding/json
// gives.
//
// The rule: a value whose key names a time unit (ends in _s, _ms, _us or
// _h) or a percentage (_pct) keeps 2 decimals (0.01 s, 0.01 %), finer than
// any table prints; every other number keeps 6 significant digits, which
// removes binary noise from ratios and scores without hiding a difference
// a reader could act on. Integers are never changed.
package jsonround

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// unitSuffixes are the key endings whose values get 2 decimals.
var unitSuffixes = []string{"_s", "_ms", "_us", "_h", "_pct"}

// Decimals says how a value under key is rounded: 2 decimals for a
// unit-bearing key (fixed true), else 6 significant digits.
func Decimals(key string) (digits int, fixed bool) {
	for _, s := range unitSuffixes {
		if strings.HasSuffix(key, s) {
			return 2, true
		}
	}
	return 6, false
}

// Round rounds one number as it would be written under key.
func Round(key string, x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	d, fixed := Decimals(key)
	var s string
	if fixed {
		s = strconv.FormatFloat(x, 'f', d, 64)
	} else {
		s = strconv.FormatFloat(x, 'g', d, 64)
	}
	v, _ := strconv.ParseFloat(s, 64)
	return v
}

// Marshal is json.Marshal (indented by indent, none when empty) with
// every number rounded by its key.
func Marshal(v any, indent string) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out, err := rewrite(raw)
	if err != nil {
		return nil, err
	}
	if indent == "" {
		return out, nil
	}
	var b bytes.Buffer
	if err := json.Indent(&b, out, "", indent); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Encode writes v as Marshal does, followed by a newline, as
// json.Encoder.Encode does.
func Encode(w io.Writer, v any, indent string) error {
	b, err := Marshal(v, indent)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// rewrite walks the token stream of raw, compact JSON and writes it back
// with each number rounded by the nearest enclosing object key.
func rewrite(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out bytes.Buffer
	// Per open container: whether it is an object, whether the next
	// token in it is a key, the current key, and whether a value was
	// written (for commas).
	type frame struct {
		object, wantKey, any bool
		key                  string
	}
	var stack []frame
	key := func() string {
		for i := len(stack) - 1; i >= 0; i-- {
			if stack[i].object {
				return stack[i].key
			}
		}
		return ""
	}
	sep := func() {
		if len(stack) == 0 {
			return
		}
		top := &stack[len(stack)-1]
		if top.object && !top.wantKey {
			out.WriteByte(':')
			top.wantKey = true
			return
		}
		if top.any {
			out.WriteByte(',')
		}
		top.any = true
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				sep()
				out.WriteByte(byte(t))
				stack = append(stack, frame{object: t == '{', wantKey: t == '{'})
			default:
				stack = stack[:len(stack)-1]
				out.WriteByte(byte(t))
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
				sep()
				stack[n-1].key = t
				stack[n-1].wantKey = false
			} else {
				sep()
			}
			b, _ := json.Marshal(t)
			out.Write(b)
		case json.Number:
			sep()
			out.WriteString(number(key(), t))
		case bool:
			sep()
			out.WriteString(strconv.FormatBool(t))
		case nil:
			sep()
			out.WriteString("null")
		default:
			return nil, fmt.Errorf("jsonround: unexpected token %T", tok)
		}
	}
	return out.Bytes(), nil
}

// number renders a JSON number rounded by its key; integers stay as
// they are.
func number(key string, n json.Number) string {
	s := n.String()
	if !strings.ContainsAny(s, ".eE") {
		return s
	}
	x, err := n.Float64()
	if err != nil {
		return s
	}
	return strconv.FormatFloat(Round(key, x), 'f', -1, 64)
}
