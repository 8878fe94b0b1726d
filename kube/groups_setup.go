package kube

import (
	"context"
	"time"

	"github.com/palsched/pal/kube/podspec"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/dynamic/dynamiclister"
	"k8s.io/client-go/tools/cache"
)

// Option changes how New builds a scheduler.
type Option func(*Scheduler)

// WithDynamic gives the scheduler a dynamic client, through which it
// reads and updates scheduler-plugins PodGroups (a CRD PAL has no typed
// client for). Without it, pods labelled scheduling.x-k8s.io/pod-group
// wait, saying so.
func WithDynamic(d dynamic.Interface) Option { return func(s *Scheduler) { s.dyn = d } }

// groupSources are the PodGroup sources of one scheduler, in precedence
// order.
type groupSources struct {
	native  nativeGroups
	cosched coschedGroups
}

func (g *groupSources) list() []podspec.GroupSource {
	return []podspec.GroupSource{&g.native, &g.cosched}
}

// setupGroups asks discovery which PodGroup APIs the apiserver serves and
// registers informers for those only, so that a cluster without them
// (GenericWorkload is off by default in 1.37; the CRD is optional) starts
// cleanly; pods naming an unserved group then wait, saying what to
// enable. A new PodGroup starts a round soon, as a new pod does. It
// returns what starts the extra informers.
func (s *Scheduler) setupGroups() func(stop <-chan struct{}) {
	d := s.client.Discovery()
	// A served API this replica may not list would keep its informer from
	// ever syncing, and no round would run: such groups' pods wait instead.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	one := metav1.ListOptions{Limit: 1}
	if served(d, NativePodGroupAPI, "podgroups") {
		if _, err := s.client.SchedulingV1beta1().PodGroups("").List(ctx, one); err != nil {
			s.groups.native.denied = err.Error()
			s.log.Warn("PodGroups served but not readable; pods naming them wait", "api", NativePodGroupAPI, "err", err)
		}
	}
	if served(d, NativePodGroupAPI, "podgroups") && s.groups.native.denied == "" {
		pi := s.factory.Scheduling().V1beta1().PodGroups()
		s.groups.native = nativeGroups{served: true, lister: pi.Lister()}
		s.synced = append(s.synced, pi.Informer().HasSynced)
		_, _ = pi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { s.poke() }})
		if reg, err := pi.Informer().AddEventHandler(s.groupRefs(podspec.NativeGroupRef)); err == nil {
			s.synced = append(s.synced, reg.HasSynced)
		}
	}
	xServed := s.dyn != nil && served(d, CoschedPodGroups.GroupVersion().String(), CoschedPodGroups.Resource)
	if xServed {
		if _, err := s.dyn.Resource(CoschedPodGroups).List(ctx, one); err != nil {
			s.groups.cosched.denied = err.Error()
			s.log.Warn("PodGroups served but not readable; pods naming them wait", "api", CoschedPodGroups.GroupVersion().String(), "err", err)
			xServed = false
		}
	}
	if !xServed {
		s.log.Info("PodGroup APIs read", NativePodGroupAPI, s.groups.native.served, CoschedPodGroups.GroupVersion().String(), false)
		return func(<-chan struct{}) {}
	}
	f := dynamicinformer.NewDynamicSharedInformerFactory(s.dyn, 0)
	gi := f.ForResource(CoschedPodGroups)
	s.groups.cosched = coschedGroups{served: true, lister: dynamiclister.New(gi.Informer().GetIndexer(), CoschedPodGroups)}
	s.synced = append(s.synced, gi.Informer().HasSynced)
	_, _ = gi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { s.poke() }})
	if reg, err := gi.Informer().AddEventHandler(s.groupRefs(podspec.CoschedGroupRef)); err == nil {
		s.synced = append(s.synced, reg.HasSynced)
	}
	s.log.Info("PodGroup APIs read", NativePodGroupAPI, s.groups.native.served, CoschedPodGroups.GroupVersion().String(), true)
	return f.Start
}

// groupRefs tells the state that a group object changed, so that its
// pods are read again (a PodGroup's minimum sets their gang's size).
func (s *Scheduler) groupRefs(ref func(ns, name string) string) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.noteRef(ref, obj) },
		UpdateFunc: func(_, obj any) { s.noteRef(ref, obj) },
		DeleteFunc: func(obj any) { s.noteRef(ref, obj) },
	}
}

func (s *Scheduler) noteRef(ref func(ns, name string) string, obj any) {
	if m, ok := tombstoned(obj).(metav1.Object); ok && s.state != nil {
		s.state.OnRef(ref(m.GetNamespace(), m.GetName()))
	}
}
