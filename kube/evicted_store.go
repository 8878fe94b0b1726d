package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/palsched/pal/internal/quote"
)

// The work credited to evicted gangs (evictedWork) lives in the round
// goroutine's memory, so a restart or another replica taking over lost it:
// a gang evicted by one leader and still waiting for its controller's new
// pods when the next leader started read as never served (LAS put it first
// again) and as having its whole run left (forecasts and backfill put its
// end too late). Each leader now keeps the records in a ConfigMap too, and
// a term starts from what it holds.

const (
	// DefaultEvictedWorkConfigMap is where the records are kept.
	DefaultEvictedWorkConfigMap = "pal-evicted-work"
	// EvictedWorkKey is the ConfigMap key holding them (JSON).
	EvictedWorkKey = "work.json"
	// evictedWorkBytes bounds what is written: a ConfigMap holds at most
	// 1 MiB, and the oldest records go first past this (a record is about
	// 200 bytes, so some 2,500 gangs evicted within evictedWorkKept).
	evictedWorkBytes = 512 << 10
	// evictedWorkRecords bounds what is read, whatever wrote it.
	evictedWorkRecords  = 16384
	evictedWriteTimeout = 30 * time.Second
	// DefaultEvictedWorkWriteInterval throttles the writes. Each write
	// replaces the whole ConfigMap, and etcd keeps every replaced
	// version until the apiserver compacts it (every 5 minutes): on a
	// kwok dev cluster a write of 2,400 records took 35-52 ms (median of
	// 100) and grew etcd's database by 0.49-0.55 MB
	// (hack/configmap-write-cost.sh). Writing after every round that
	// evicts, with rounds a second apart under heavy preemption, is then
	// some 150 MB of history per compaction; one write per 10 s is at
	// most 15 MB, and a crash (not a handover, which flushes) loses at
	// most the last 10 s of evictions' records.
	DefaultEvictedWorkWriteInterval = 10 * time.Second
)

// evictedRecord is one gang's record in the ConfigMap.
type evictedRecord struct {
	Gang     string    `json:"gang"`  // workKey
	Owner    string    `json:"owner"` // the evicted pods' controller UID
	Executed float64   `json:"executed"`
	Attained float64   `json:"attained"`
	Service  float64   `json:"service"`
	At       time.Time `json:"at"` // when it was evicted
	// Seen is when its gang was last seen waiting (absent: not since
	// At); the record is dropped evictedWorkKept after the later.
	Seen time.Time `json:"seen,omitzero"`
	// Arrived is when the gang first arrived (absent: not known; a
	// record written before it was kept): its pods made again have
	// later creation times, and it keeps its place in line by this.
	Arrived time.Time `json:"arrived,omitzero"`
	// Debt is the restart cost it owes (job seconds; absent: none).
	Debt float64 `json:"debt,omitempty"`
	// Promise is the start EASY backfill promised it as a waiting head
	// before its new pods came (absent: none).
	Promise time.Time `json:"promise,omitzero"`
	// Bound is the round that last bound it before it was evicted
	// (absent: not known): a backfill record naming it as a head, made
	// at an earlier round, is spent.
	Bound time.Time `json:"bound,omitzero"`
}

type evictedFile struct {
	Version int             `json:"version"`
	Gangs   []evictedRecord `json:"gangs"`
}

// formatEvictedWork is the ConfigMap's content for m: the newest records
// first (ties by gang) within limit bytes, and how many older ones did
// not fit.
func formatEvictedWork(m map[string]evictedWork, limit int) (string, int) {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		if c := m[b].at.Compare(m[a].at); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	f := evictedFile{Version: 1, Gangs: make([]evictedRecord, 0, len(keys))}
	size := len(`{"version":1,"gangs":[]}`)
	for i, k := range keys {
		e := m[k]
		r := evictedRecord{Gang: k, Owner: string(e.owner), Executed: e.executed, Attained: e.attained, Service: e.service, At: e.at.UTC(), Arrived: e.arrived.UTC(), Debt: e.debt, Promise: e.promise.UTC(), Bound: e.bound.UTC()}
		if e.saved.After(e.at) {
			r.Seen = e.saved.UTC()
		}
		b, _ := json.Marshal(r)
		if size += len(b) + min(i, 1); size > limit { // a comma before all but the first
			return encodeEvicted(f), len(keys) - i
		}
		f.Gangs = append(f.Gangs, r)
	}
	return encodeEvicted(f), 0
}

func encodeEvicted(f evictedFile) string {
	b, _ := json.Marshal(f)
	return string(b)
}

// parseEvictedWork reads the ConfigMap's content (named src in errors).
// A record that is malformed (empty or overlong gang or owner, a work
// figure negative or not finite, no time), or whose gang was last seen
// (Seen, else At) more than kept before now, is left out, the malformed ones counted in bad with the first one's
// reason; content that is not the format at all is an error.
func parseEvictedWork(src, data string, now time.Time, kept time.Duration) (m map[string]evictedWork, bad int, first string, err error) {
	// Fields this version does not know are read past (see
	// evictedUnknown): a newer scheduler's file, rolled back to this
	// one, keeps the records this version can read.
	dec := json.NewDecoder(strings.NewReader(data))
	var f evictedFile
	if err := dec.Decode(&f); err != nil {
		return nil, 0, "", fmt.Errorf("%s: key %s: %w", src, EvictedWorkKey, boundErr(err))
	}
	if f.Version != 1 {
		return nil, 0, "", fmt.Errorf("%s: key %s: field version: %d, want 1", src, EvictedWorkKey, f.Version)
	}
	if len(f.Gangs) > evictedWorkRecords {
		return nil, 0, "", fmt.Errorf("%s: key %s: field gangs: %d records, at most %d", src, EvictedWorkKey, len(f.Gangs), evictedWorkRecords)
	}
	m = make(map[string]evictedWork, len(f.Gangs))
	for i, r := range f.Gangs {
		why := ""
		switch {
		case r.Gang == "" || len(r.Gang) > 1024:
			why = "field gang: empty or longer than 1024 bytes"
		case r.Owner == "" || len(r.Owner) > 128:
			why = "field owner: empty or longer than 128 bytes"
		case !workFigure(r.Executed):
			why = "field executed: " + fmt.Sprint(r.Executed) + ", want a finite number >= 0"
		case !workFigure(r.Attained):
			why = "field attained: " + fmt.Sprint(r.Attained) + ", want a finite number >= 0"
		case !workFigure(r.Service):
			why = "field service: " + fmt.Sprint(r.Service) + ", want a finite number >= 0"
		case !workFigure(r.Debt):
			why = "field debt: " + fmt.Sprint(r.Debt) + ", want a finite number >= 0"
		case r.At.IsZero():
			why = "field at: missing"
		}
		if why != "" {
			if bad++; bad == 1 {
				first = fmt.Sprintf("%s: key %s: gangs[%d] (%s): %s", src, EvictedWorkKey, i, quote.Value(r.Gang), why)
			}
			continue
		}
		seen := r.At
		if r.Seen.After(seen) {
			seen = r.Seen
		}
		if now.Sub(seen) > kept {
			continue
		}
		if o, ok := m[r.Gang]; ok && !r.At.After(o.at) {
			continue // listed twice: the newer eviction stands
		}
		arrived := r.Arrived
		if arrived.After(r.At) {
			arrived = time.Time{} // it cannot have arrived after its eviction: not kept
		}
		bound := r.Bound
		if bound.After(r.At) {
			bound = time.Time{} // bound after its eviction: not kept
		}
		m[r.Gang] = evictedWork{executed: r.Executed, attained: r.Attained, service: r.Service, owner: types.UID(r.Owner), at: r.At, seen: seen, saved: seen, arrived: arrived, debt: r.Debt, promise: r.Promise, bound: bound}
	}
	return m, bad, first, nil
}

func workFigure(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }

// boundErr keeps a decoder's error short: some quote the input.
// evictedUnknown names the first field of the ConfigMap's content (named
// src) that this version does not know ("" when none): a newer scheduler
// wrote it, and a rollback must not refuse the whole file for it (an
// older version did, and its next write replaced every record).
func evictedUnknown(src, data string) string {
	dec := json.NewDecoder(strings.NewReader(data))
	dec.DisallowUnknownFields()
	var f evictedFile
	if err := dec.Decode(&f); err != nil {
		return fmt.Sprintf("%s: key %s: %v", src, EvictedWorkKey, boundErr(err))
	}
	return ""
}

func boundErr(err error) error {
	if s := err.Error(); len(s) > 200 {
		return fmt.Errorf("%s...", s[:200])
	}
	return err
}

// evictedStore is the round goroutine's side of the ConfigMap.
type evictedStore struct {
	restore bool          // the next round merges the ConfigMap in (a term's first)
	dirty   bool          // evictedWork changed since the last write
	last    time.Time     // when the last write started
	write   *learnedWrite // a write under way
	failing bool          // the last write failed (said once)
	unread  bool          // the last read failed (said once)
	dropped int           // records the last write left out for room
}

// settleEvicted takes the outcome of the write under way, once it has
// ended (with wait, waiting for it): a failed one leaves the records
// unwritten. It reports whether no write is under way now.
func (s *Scheduler) settleEvicted(wait bool) bool {
	st := &s.evicted
	w := st.write
	if w == nil {
		return true
	}
	if !wait {
		select {
		case <-w.done:
		default:
			return false
		}
	}
	<-w.done
	st.write = nil
	s.noteEvictedWrite(w.err)
	return true
}

// noteEvictedWrite takes a write's outcome. A failure is logged once
// until a write succeeds again: a ConfigMap that cannot be written (no
// namespace, no RBAC for it) is retried after every round that evicts,
// and saying so each time would bury the log.
func (s *Scheduler) noteEvictedWrite(err error) {
	st := &s.evicted
	src := s.cfg.Namespace + "/" + s.cfg.EvictedWorkConfigMap
	switch {
	case err != nil:
		st.dirty = true
		if !st.failing {
			s.log.Warn("evicted gangs' work not written; tried again after each round until it is (said once): a restarted or new leader reads the gangs evicted meanwhile as starting over", "configmap", src, "err", err)
		}
		st.failing = true
	case st.failing:
		st.failing = false
		s.log.Info("evicted gangs' work written again", "configmap", src)
	}
}

// restoreEvictedWork merges the ConfigMap's records into evictedWork at a
// term's first round: another leader may have evicted gangs since this
// one last led, or this process is new. Where both hold a gang, the newer
// eviction stands. A read that fails (the apiserver, not the content) is
// tried again at the next round, and until one succeeds nothing is
// written: a write would replace the records it did not read. An
// unreadable ConfigMap is logged, with an event on it when announce (a
// round; not pal-kube forecast, which changes nothing), and its records
// are lost; the next write replaces it.
func (s *Scheduler) restoreEvictedWork(ctx context.Context, announce bool) {
	name := s.cfg.EvictedWorkConfigMap
	if name == "" {
		s.evicted.restore = false
		return
	}
	src := "ConfigMap " + s.cfg.Namespace + "/" + name
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cm, err := s.client.CoreV1().ConfigMaps(s.cfg.Namespace).Get(gctx, name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		if !s.evicted.unread {
			s.log.Warn("evicted gangs' work not read; read again at each round, and not written, until it is (said once)", "configmap", src, "err", err)
		}
		s.evicted.unread = true
		return
	}
	if s.evicted.unread {
		s.log.Info("evicted gangs' work read", "configmap", src)
	}
	s.evicted.restore, s.evicted.unread = false, false
	if err != nil {
		return // none yet
	}
	m, bad, first, err := parseEvictedWork(src, cm.Data[EvictedWorkKey], time.Now(), evictedWorkKept)
	if err != nil {
		s.log.Warn("evicted gangs' work unreadable; the next write replaces it", "err", err)
		if !announce {
			return
		}
		s.events.post(corev1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1", Namespace: cm.Namespace, Name: cm.Name, UID: cm.UID}, corev1.EventTypeWarning, "EvictedWorkUnreadable", "Read", err.Error()+"; the scheduler's next write replaces it")
		s.evicted.dirty = true
		return
	}
	if u := evictedUnknown(src, cm.Data[EvictedWorkKey]); u != "" {
		s.log.Warn("evicted gangs' work: fields this version does not know were ignored (written by a newer scheduler?)", "configmap", src, "first", u)
	}
	if bad > 0 {
		s.log.Warn("evicted gangs' work: malformed records left out", "configmap", src, "count", bad, "first", first)
		s.evicted.dirty = true
	}
	n := 0
	for k, e := range m {
		if o, ok := s.evictedWork[k]; ok && !e.at.After(o.at) {
			continue
		}
		s.evictedWork[k] = e
		n++
	}
	if n > 0 {
		s.log.Info("evicted gangs' work restored", "configmap", src, "gangs", n)
	}
}

// saveEvictedWork writes evictedWork to the ConfigMap beside the rounds
// when it changed, one write at a time and at most one per
// evictedWorkWriteInterval (from now, the round's start); a failed one is
// tried again after the next interval.
func (s *Scheduler) saveEvictedWork(ctx context.Context, now time.Time) {
	s.metrics.EvictedWork.Set(float64(len(s.evictedWork)))
	st := &s.evicted
	if !s.settleEvicted(false) || st.restore {
		return
	}
	if !st.dirty || s.cfg.EvictedWorkConfigMap == "" || now.Sub(st.last) < s.cfg.EvictedWorkWriteInterval.Duration {
		return
	}
	st.dirty, st.last = false, now
	data, dropped := formatEvictedWork(s.evictedWork, evictedWorkBytes)
	if dropped > 0 && st.dropped == 0 {
		s.log.Warn("evicted gangs' work: the oldest records left out of the ConfigMap for room", "configmap", s.cfg.Namespace+"/"+s.cfg.EvictedWorkConfigMap, "count", dropped)
	}
	st.dropped = dropped
	w := &learnedWrite{done: make(chan struct{})}
	st.write = w
	go func() {
		defer close(w.done)
		wctx, cancel := context.WithTimeout(ctx, evictedWriteTimeout)
		defer cancel()
		w.err = s.putEvictedWork(wctx, data)
	}()
}

// flushEvictedWork waits for the write under way and writes what is
// still unwritten when a term ends, so that the next leader reads it.
func (s *Scheduler) flushEvictedWork() {
	st := &s.evicted
	s.settleEvicted(true)
	if st.dirty && !st.restore && s.cfg.EvictedWorkConfigMap != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		data, _ := formatEvictedWork(s.evictedWork, evictedWorkBytes)
		st.dirty = false
		s.noteEvictedWrite(s.putEvictedWork(ctx, data))
	}
}

// putEvictedWork writes data to the ConfigMap's key (upsertConfigMap);
// it runs beside the rounds and leaves the logging to noteEvictedWrite.
func (s *Scheduler) putEvictedWork(ctx context.Context, data string) error {
	err := s.upsertConfigMap(ctx, s.cfg.EvictedWorkConfigMap, nil, map[string]string{EvictedWorkKey: data}, nil)
	if err != nil {
		s.metrics.EvictedWorkWrites.WithLabelValues("error").Inc()
		return err
	}
	s.metrics.EvictedWorkWrites.WithLabelValues("ok").Inc()
	return nil
}

// validateEvictedWork checks the field against the ConfigMaps the
// scheduler reads: writing over one of them would destroy it.
func (c *Config) validateEvictedWork() error {
	if c.EvictedWorkWriteInterval.Duration < 0 {
		return fmt.Errorf("field evictedWorkWriteInterval: must be >= 0, got %v", c.EvictedWorkWriteInterval)
	}
	n := c.EvictedWorkConfigMap
	if n == "" {
		return nil
	}
	if f := c.configMapField(n, "evictedWorkConfigMap"); f != "" {
		return fmt.Errorf("field evictedWorkConfigMap: %s is the %s; the scheduler would overwrite it", quote.Value(n), f)
	}
	return nil
}

// configMapField names the field of another ConfigMap the scheduler
// reads or keeps that is called name ("" none), leaving out the fields
// in but: a ConfigMap the scheduler writes must not be one of them.
func (c *Config) configMapField(name string, but ...string) string {
	for _, o := range []struct{ field, name string }{
		{"variabilityConfigMap", c.VariabilityConfigMap},
		{"learnedScoresConfigMap", c.LearnedScoresConfigMap},
		{"cellsConfigMap", c.CellsConfigMap},
		{"evictedWorkConfigMap", c.EvictedWorkConfigMap},
	} {
		if o.name == name && !slices.Contains(but, o.field) {
			return o.field
		}
	}
	return ""
}
