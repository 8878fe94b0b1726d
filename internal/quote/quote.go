// Package quote shows a value read from input inside an error message.
//
// Every reader quotes what it could not read, so that a user sees the
// bad bytes. Input is not bounded by the reader's caller: a CSV field may
// be a megabyte, a pod annotation a quarter of one, and %q writes an
// invalid byte as four characters. One message per bad value, repeated in
// events and logs, must stay short whatever the value was.
package quote

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Show is how many bytes of a value a message shows.
const Show = 80

// Value is strconv.Quote of s cut to its first Show bytes (at a
// character boundary), with the full length said after the cut, so that
// a 100 MB value makes a message of about a hundred bytes.
func Value(s string) string {
	head, ok := cut(s)
	if ok {
		return strconv.Quote(s)
	}
	return strconv.Quote(head) + fmt.Sprintf("... (%d bytes)", len(s))
}

// MessageShow is how many bytes of another library's message Message
// keeps.
const MessageShow = 240

// Message cuts a message that another library wrote, and may have filled
// with the input it refused (the Prometheus text parser quotes a whole
// label value), to its first MessageShow bytes with its full length said.
func Message(s string) string {
	head, ok := cutAt(s, MessageShow)
	if ok {
		return s
	}
	return head + fmt.Sprintf("... (a message of %d bytes)", len(s))
}

// Text is Value for a name a message shows bare, as a container's name
// between parentheses: cut the same way, not quoted.
func Text(s string) string {
	head, ok := cut(s)
	if ok {
		return s
	}
	return head + fmt.Sprintf("... (%d bytes)", len(s))
}

// cut is s's first Show bytes, never ending inside a character, and
// whether that is all of s. It steps back at most to the start of the
// character it would split: bytes that start no character (invalid
// UTF-8) are cut at Show, else a run of them would show nothing.
func cut(s string) (string, bool) { return cutAt(s, Show) }

// cutAt is cut at max bytes.
func cutAt(s string, max int) (string, bool) {
	if len(s) <= max {
		return s, true
	}
	n := max
	for n > max-utf8.UTFMax+1 && !utf8.RuneStart(s[n]) {
		n--
	}
	if !utf8.RuneStart(s[n]) {
		n = max
	}
	return s[:n], false
}
