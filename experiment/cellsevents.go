package experiment

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/palsched/pal/internal/csvin"
	"github.com/palsched/pal/policy/tenant"
	"github.com/palsched/pal/tenancy"
	"github.com/palsched/pal/workload"
)

// cellsEvent is one row of --cells-events: the cells config in force
// from time t on.
type cellsEvent struct {
	t    float64
	cfg  *tenancy.Config
	line int
}

// MaxCellsEvents bounds the rows of a --cells-events file: each names a
// cells file to read and check, and no run changes its config more often
// than this.
const MaxCellsEvents = 10000

// loadCellsEvents reads a --cells-events file (time_s,cells; a cells path
// relative to the file) and checks each config before the first round:
// it parses and is feasible, it describes the cluster the run has (the
// same nodes, devices and VCs) and every job of the trace fits it. Errors
// name the events file's line and field, and the cells file's own.
func loadCellsEvents(path string, l *tenant.Layout, tr *workload.Trace) ([]cellsEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dir := filepath.Dir(path)
	return parseCellsEvents(path, f, func(cells string) (*tenancy.Config, error) {
		if !filepath.IsAbs(cells) {
			cells = filepath.Join(dir, cells)
		}
		cfg, err := tenancy.LoadFile(cells)
		if err != nil {
			return nil, err
		}
		nl, err := l.Same(cfg)
		if err != nil {
			return nil, err
		}
		if err := nl.Validate(tr, true); err != nil {
			return nil, fmt.Errorf("under %s: %w", cfg.File, err)
		}
		return cfg, nil
	})
}

// parseCellsEvents reads time_s,cells rows in time order, loading each
// distinct cells path once with load.
func parseCellsEvents(name string, r io.Reader, load func(path string) (*tenancy.Config, error)) ([]cellsEvent, error) {
	t, err := csvin.Open(name, r, csvin.Known("time_s", "cells"), csvin.EmptyMsg("empty file (want a header time_s,cells)"))
	if err != nil {
		return nil, err
	}
	cols, err := t.Cols("time_s", "cells")
	if err != nil {
		return nil, err
	}
	loaded := map[string]*tenancy.Config{}
	var out []cellsEvent
	for t.Next() {
		if len(out) == MaxCellsEvents {
			return nil, t.Errorf(cols[0], "more than %d cells changes", MaxCellsEvents)
		}
		at, err := t.Float(cols[0])
		if err != nil {
			return nil, err
		}
		if at < 0 || (len(out) > 0 && at < out[len(out)-1].t) {
			return nil, t.Errorf(cols[0], "%g s is negative or before the previous change", at)
		}
		p, err := t.Field(cols[1])
		if err != nil {
			return nil, err
		}
		if p == "" {
			return nil, t.Errorf(cols[1], "empty: want the path of a cells file")
		}
		cfg, ok := loaded[p]
		if !ok {
			if cfg, err = load(p); err != nil {
				return nil, t.Errorf(cols[1], "%v", err)
			}
			loaded[p] = cfg
		}
		out = append(out, cellsEvent{t: at, cfg: cfg, line: t.Line()})
	}
	return out, t.Err()
}
