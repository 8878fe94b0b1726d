package kube

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/tenancy"
)

// CellsKey is the cells' key in a ConfigMap besides HiveD's own
// (tenancy.ConfigMapKey, hivedscheduler.yaml).
const CellsKey = "cells.yaml"

// Events of the cells ConfigMap.
const (
	ReasonCellsApplied = "CellsApplied"
	ReasonCellsRefused = "CellsRefused"
)

// watchCells applies a change of the cells ConfigMap (cellsConfigMap)
// under the running gangs, as HiveD applies a changed config when it
// restarts (tenant.HiveD.ReconfigureAny): a gang that still fits its VC
// keeps its cells, one that no longer fits is lazily preempted (it runs
// on as opportunistic until a guaranteed gang needs its GPUs), and none
// is evicted for the change itself. A config that does not parse or is
// infeasible is refused with its file, line and field (a warning event on
// the ConfigMap and a log line), and the config in force stays. It runs
// at the start of a round, before the cells meet the round's nodes. At a
// scheduler's first round, before any running gang is the cells', a
// ConfigMap that differs from the cells file gives the cells the round
// takes the running gangs in under (a restart reaches the cells the
// scheduler that ran on had, and its gangs where that one kept them).
func (s *Scheduler) watchCells(snap *snapshot) {
	t := s.ten
	name := s.cfg.CellsConfigMap
	defer s.saveAppliedCells()
	cm, err := s.cms.ConfigMaps(s.cfg.Namespace).Get(name)
	if err != nil {
		if !t.cellsMissing {
			s.log.Warn("cells ConfigMap not found; the cells in force stay", "configmap", s.cfg.Namespace+"/"+name, "err", err)
			t.cellsMissing = true
			if !t.begun {
				s.cellsFromApplied(nil, "not found")
			}
		}
		return
	}
	t.cellsMissing = false
	if cm.ResourceVersion == t.cellsRV {
		return
	}
	t.cellsRV = cm.ResourceVersion
	key := tenancy.ConfigMapKey
	text, ok := cm.Data[key]
	if !ok {
		key = CellsKey
		text, ok = cm.Data[key]
	}
	src := fmt.Sprintf("configmap %s/%s key %s", s.cfg.Namespace, name, key)
	ref := corev1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1", Namespace: s.cfg.Namespace, Name: name, UID: cm.UID}
	if !ok {
		msg := fmt.Sprintf("configmap %s/%s has neither %s nor %s; the cells in force stay", s.cfg.Namespace, name, tenancy.ConfigMapKey, CellsKey)
		s.log.Error(msg)
		s.events.post(ref, corev1.EventTypeWarning, ReasonCellsRefused, "Reconfiguring", msg)
		if !t.begun {
			s.cellsFromApplied(&ref, "it has neither key")
		}
		return
	}
	if t.cellsText == "" {
		if b, err := os.ReadFile(s.cfg.Cells); err == nil {
			t.cellsText = string(b)
		}
	}
	if text == t.cellsText {
		s.applied.want = text
		return // the config in force
	}
	cfg, err := tenancy.Parse(src, []byte(text))
	if err == nil {
		var l = t.l
		var rep tenancy.Reconfig
		l, rep, err = t.hived.ReconfigureAny(cfg)
		if err == nil {
			t.l, t.cellsText, t.reshaped = l, text, true
			s.applied.want = text
			// A gang none of whose GPUs the new cells have is no longer
			// the cells': it runs on outside them (adoptRunning says so)
			// instead of being placed afresh as if it waited.
			for _, g := range rep.Gone {
				if id, err := strconv.Atoi(g); err == nil {
					delete(t.held, id)
				}
			}
			// The new cells' nodes meet the round's nodes afresh (sync), and
			// hived-pm's scores are put in their numbering again.
			clear(t.down)
			t.scores = nil
			names := gangNames(snap)
			if !t.begun {
				// A scheduler's first round: no gang is the cells' yet. The
				// ConfigMap's cells are those in force from the start, and
				// the running gangs are taken in under them this round
				// (adoptRunning), as HiveD re-reads its allocated pods under
				// the config it restarts with.
				msg := fmt.Sprintf("cells from %s in force from the start, not the cells file's (%s); the running gangs are taken in under them", src, s.cfg.Cells)
				s.log.Info(msg)
				s.events.post(ref, corev1.EventTypeNormal, ReasonCellsApplied, "Reconfiguring", msg)
				return
			}
			msg := fmt.Sprintf("cells from %s applied under the running gangs: kept %s; lazily preempted %s; guaranteed again %s; preemptions in progress dropped %s",
				src, list(rep.Kept, names), list(rep.Demoted, names), list(rep.Reverted, names), list(rep.Cancelled, names))
			if len(rep.Gone) > 0 {
				msg += "; running on outside the cells " + list(rep.Gone, names)
			}
			if len(rep.Dropped) > 0 {
				msg += "; devices no longer in the cells " + strings.Join(rep.Dropped, ", ")
			}
			s.log.Info(msg)
			s.events.post(ref, corev1.EventTypeNormal, ReasonCellsApplied, "Reconfiguring", msg)
			return
		}
	}
	msg := fmt.Sprintf("%v; the cells in force stay", err)
	s.log.Error("cells ConfigMap refused", "err", msg)
	s.events.post(ref, corev1.EventTypeWarning, ReasonCellsRefused, "Reconfiguring", msg)
	if !t.begun {
		s.cellsFromApplied(&ref, "refused")
	}
}

// appliedCells keeps the cells text last in force from the cells
// ConfigMap in a ConfigMap of the scheduler's own (AppliedCellsConfigMap):
// a scheduler that starts while the operator's ConfigMap is refused or
// gone would otherwise take the running gangs in under the cells file's
// cells, which the one before it had left behind (bad input would undo
// what was accepted). Only the round goroutine touches it but for busy
// and done; the write runs in the background.
type appliedCells struct {
	want, saved string // the text in force from the ConfigMap; the text last written ("" none)
	busy        atomic.Bool
	done        chan appliedWrite // a finished write
	failing     bool              // a failure was logged
	next        time.Time         // no write before (after a failure)
}

type appliedWrite struct {
	text string
	err  error
}

// appliedCellsRetry is how long after a failed write of the copy the next
// is tried.
var appliedCellsRetry = time.Minute

// AppliedCellsConfigMap names the scheduler's copy of the cells in force
// from cellsConfigMap name (see appliedCells).
func AppliedCellsConfigMap(name string) string { return name + "-applied" }

// validateAppliedCells checks the copy's name against the ConfigMaps the
// scheduler reads or keeps: writing over one of them would destroy it.
func (c *Config) validateAppliedCells() error {
	if c.CellsConfigMap == "" {
		return nil
	}
	n := AppliedCellsConfigMap(c.CellsConfigMap)
	if f := c.configMapField(n); f != "" {
		return fmt.Errorf("field cellsConfigMap: the cells in force are kept in %s, which is the %s; the scheduler would overwrite it", quote.Value(n), f)
	}
	return nil
}

// saveAppliedCells writes the cells in force from the ConfigMap to the
// scheduler's copy when it changed, one write at a time, and a minute
// after a failed one.
func (s *Scheduler) saveAppliedCells() {
	a := &s.applied
	src := s.cfg.Namespace + "/" + AppliedCellsConfigMap(s.cfg.CellsConfigMap)
	select {
	case r := <-a.done:
		if r.err != nil {
			a.next = time.Now().Add(appliedCellsRetry)
			if !a.failing {
				s.log.Warn("the cells in force not kept for a restart; tried again in a minute (said once): a scheduler that starts while the cells ConfigMap is refused or gone takes the cells file's", "configmap", src, "err", r.err)
			}
			a.failing = true
		} else {
			a.saved = r.text
			if a.failing {
				s.log.Info("the cells in force kept for a restart again", "configmap", src)
			}
			a.failing = false
		}
	default:
	}
	if a.want == "" || a.want == a.saved || time.Now().Before(a.next) || !a.busy.CompareAndSwap(false, true) {
		return
	}
	if a.done == nil {
		a.done = make(chan appliedWrite, 1)
	}
	text, ns, name := a.want, s.cfg.Namespace, AppliedCellsConfigMap(s.cfg.CellsConfigMap)
	s.inBackground(func(ctx context.Context) {
		defer a.busy.Store(false)
		a.done <- appliedWrite{text, s.writeAppliedCells(ctx, ns, name, text)}
	})
}

// writeAppliedCells makes the copy hold text.
func (s *Scheduler) writeAppliedCells(ctx context.Context, ns, name, text string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cms := s.client.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Data:       map[string]string{CellsKey: text},
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil || cm.Data[CellsKey] == text {
		return err
	}
	cm = cm.DeepCopy()
	cm.Data = map[string]string{CellsKey: text}
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

// cellsFromApplied puts the cells last in force from the ConfigMap (the
// scheduler's copy) in force at a scheduler's first round, when the
// ConfigMap itself cannot give them (why: it is gone, or refused), so
// that the running gangs are taken in under the cells the scheduler
// before it had, not the cells file's. ref is the ConfigMap's, for the
// event (nil when it is gone). A copy that is missing, equal to the cells
// file or no longer valid leaves the file's cells.
func (s *Scheduler) cellsFromApplied(ref *corev1.ObjectReference, why string) {
	t := s.ten
	name := AppliedCellsConfigMap(s.cfg.CellsConfigMap)
	ctx := s.roundCtx
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cm, err := s.client.CoreV1().ConfigMaps(s.cfg.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			s.log.Warn("the cells last in force not read: the cells file's are in force", "configmap", s.cfg.Namespace+"/"+name, "err", err)
		}
		return // none kept: the file's cells
	}
	text := cm.Data[CellsKey]
	if t.cellsText == "" {
		if b, err := os.ReadFile(s.cfg.Cells); err == nil {
			t.cellsText = string(b)
		}
	}
	s.applied.saved = text
	if text == "" || text == t.cellsText {
		return
	}
	src := fmt.Sprintf("configmap %s/%s key %s", s.cfg.Namespace, name, CellsKey)
	cfg, err := tenancy.Parse(src, []byte(text))
	if err == nil {
		var l = t.l
		l, _, err = t.hived.ReconfigureAny(cfg)
		if err == nil {
			t.l, t.cellsText, t.reshaped = l, text, true
			s.applied.want = text
			clear(t.down)
			t.scores = nil
			msg := fmt.Sprintf("cells ConfigMap %s/%s %s: the cells last in force from it (%s) are in force from the start, not the cells file's (%s); the running gangs are taken in under them", s.cfg.Namespace, s.cfg.CellsConfigMap, why, src, s.cfg.Cells)
			s.log.Warn(msg)
			if ref != nil {
				s.events.post(*ref, corev1.EventTypeNormal, ReasonCellsApplied, "Reconfiguring", msg)
			}
			return
		}
	}
	s.log.Warn("the cells last in force not taken: the cells file's are", "err", err)
}

// gangNames maps the cells' group names (job ids) to gang names.
func gangNames(snap *snapshot) map[string]string {
	out := map[string]string{}
	for _, g := range snap.Gangs {
		if g.Job != nil {
			out[strconv.Itoa(g.Job.ID)] = gangName(g.Key)
		}
	}
	return out
}

// list renders the cells' groups as gang names for a message.
func list(gs []string, names map[string]string) string {
	if len(gs) == 0 {
		return "none"
	}
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = names[g]
		if out[i] == "" {
			out[i] = "job " + g
		}
	}
	return strings.Join(out, ", ")
}
