// Package clitest checks that a command tree speaks PAL's one command-line
// vocabulary, so that pal and pal-kube (two binaries, two test packages)
// are held to the same rules by one implementation.
package clitest

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// CheckFlags walks root and every command under it: -o is --output, the
// format, and nothing else, defaulting to defaultOutput (or to
// otherFormat[command path] for a command whose -o picks something other
// than a results format) and offering json; --out is described as a
// path; --seed defaults to 42; no Go type name shows in help and no
// default shows as "[]" or in e+ notation. It returns how many commands
// and flags it saw, so a caller can tell a broken walk.
func CheckFlags(t testing.TB, root *cobra.Command, defaultOutput string, otherFormat map[string]string) (commands, flags int) {
	t.Helper()
	typeName := regexp.MustCompile(`\b(u?int(8|16|32|64)|float(32|64)|complex(64|128)|\w+Slice|\w+Array|stringTo\w+|map\[|\[\]\w+)\b`)
	placeholder := regexp.MustCompile(`^([a-z]+|[A-Z][A-Z_=]*)?$`)
	isPath := regexp.MustCompile(`\b(file|directory|DIR)\b`)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		commands++
		path := c.CommandPath()
		for _, text := range []string{c.Short, c.Long, c.Example} {
			if m := typeName.FindString(text); m != "" {
				t.Errorf("%s: help shows Go type name %q", path, m)
			}
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			flags++
			name, usage := pflag.UnquoteUsage(f)
			if !placeholder.MatchString(name) || typeName.MatchString(name) {
				t.Errorf("%s --%s: help shows its value as %q", path, f.Name, name)
			}
			if m := typeName.FindString(usage); m != "" {
				t.Errorf("%s --%s: usage shows Go type name %q", path, f.Name, m)
			}
			if f.Shorthand == "o" || f.Name == "output" {
				if f.Name != "output" || f.Shorthand != "o" {
					t.Errorf("%s: -%s/--%s; -o is --output, the format", path, f.Shorthand, f.Name)
				}
				want := defaultOutput
				if w, ok := otherFormat[path]; ok {
					want = w
				}
				if f.DefValue != want {
					t.Errorf("%s: --output defaults to %q, want %q like every results command", path, f.DefValue, want)
				}
				if want == defaultOutput && !strings.Contains(usage, "json") {
					t.Errorf("%s: --output %q offers no json", path, usage)
				}
			}
			if f.Name == "out" && (f.Shorthand != "" || !isPath.MatchString(usage)) {
				t.Errorf("%s --out: %q is not described as a path", path, usage)
			}
			if f.Name == "seed" && f.DefValue != "42" {
				t.Errorf("%s: --seed defaults to %s, want 42 like every command", path, f.DefValue)
			}
			if strings.Contains(f.DefValue, "e+") || f.DefValue == "[]" {
				t.Errorf("%s --%s: default shown as %q", path, f.Name, f.DefValue)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return commands, flags
}

// Run executes root with args, as the binary would, and returns what it
// wrote to stdout and stderr together.
func Run(t testing.TB, root *cobra.Command, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}
