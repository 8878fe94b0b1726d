package kube

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

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
	cm, err := s.cms.ConfigMaps(s.cfg.Namespace).Get(name)
	if err != nil {
		if !t.cellsMissing {
			s.log.Warn("cells ConfigMap not found; the cells in force stay", "configmap", s.cfg.Namespace+"/"+name, "err", err)
			t.cellsMissing = true
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
		return
	}
	if t.cellsText == "" {
		if b, err := os.ReadFile(s.cfg.Cells); err == nil {
			t.cellsText = string(b)
		}
	}
	if text == t.cellsText {
		return // the config in force
	}
	cfg, err := tenancy.Parse(src, []byte(text))
	if err == nil {
		var l = t.l
		var rep tenancy.Reconfig
		l, rep, err = t.hived.ReconfigureAny(cfg)
		if err == nil {
			t.l, t.cellsText, t.reshaped = l, text, true
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
