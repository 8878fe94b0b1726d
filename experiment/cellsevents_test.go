package experiment

import (
	"errors"
	"strings"
	"testing"

	"github.com/palsched/pal/tenancy"
)

// parseCellsEvents on hand-written files: rows in time order, each cells
// path loaded once, errors naming the file, line and field.
func TestParseCellsEvents(t *testing.T) {
	cfg := &tenancy.Config{File: "c.yaml"}
	loads := 0
	load := func(p string) (*tenancy.Config, error) {
		loads++
		if p == "bad.yaml" {
			return nil, errors.New("bad.yaml:3: field \"x\": no")
		}
		return cfg, nil
	}
	ev, err := parseCellsEvents("ev.csv", strings.NewReader("time_s,cells\n0,c.yaml\n60,c.yaml\n60,d.yaml\n"), load)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev) != 3 || ev[1].t != 60 || ev[2].line != 4 || loads != 2 {
		t.Fatalf("events %+v, %d loads", ev, loads)
	}
	for text, want := range map[string]string{
		"":                                "ev.csv: empty file (want a header time_s,cells)",
		"time_s\n0\n":                     `ev.csv:1: field "cells": missing column`,
		"time_s,cells\n-1,c.yaml\n":       `ev.csv:2: field "time_s": -1 s is negative or before the previous change`,
		"time_s,cells\nx,c.yaml\n":        `ev.csv:2: field "time_s"`,
		"time_s,cells\n0,\n":              `ev.csv:2: field "cells": empty`,
		"time_s,cells\n0,bad.yaml\n":      `ev.csv:2: field "cells": bad.yaml:3: field "x": no`,
		"time_s,cells,node\n0,c.yaml,1\n": `ev.csv:1: field "node": unknown column`,
	} {
		_, err := parseCellsEvents("ev.csv", strings.NewReader(text), load)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: got %v, want %s...", text, err, want)
		}
	}
}

// Any input gets events in time order or an error naming the file, in
// bounded time (each distinct path is loaded once).
func FuzzParseCellsEvents(f *testing.F) {
	f.Add("time_s,cells\n0,a.yaml\n60,b.yaml\n")
	f.Add("time_s,cells\n1e308,a\n")
	f.Add("cells,time_s\n\"a,b\",0\n")
	f.Add("time_s,cells\nNaN,a\n")
	f.Fuzz(func(t *testing.T, text string) {
		loads := map[string]int{}
		ev, err := parseCellsEvents("f.csv", strings.NewReader(text), func(p string) (*tenancy.Config, error) {
			loads[p]++
			if loads[p] > 1 {
				t.Fatalf("%q loaded twice", p)
			}
			if strings.Contains(p, "x") {
				return nil, errors.New("no")
			}
			return &tenancy.Config{File: p}, nil
		})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.csv") || len(err.Error()) > 1024 {
				t.Fatalf("error without the file, or over 1 KiB: %.300v", err)
			}
			return
		}
		for i, e := range ev {
			if !(e.t >= 0) || (i > 0 && e.t < ev[i-1].t) || e.cfg == nil {
				t.Fatalf("event %d: %+v", i, e)
			}
		}
	})
}
