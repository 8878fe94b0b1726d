package main

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/palsched/pal/kube"
)

// Write requests are summed by verb and group/resource/subresource over
// response codes; reads, other metrics and broken lines are left out.
func TestParseWrites(t *testing.T) {
	text := `# HELP apiserver_request_total x
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 400
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 2
apiserver_request_total{code="201",component="apiserver",dry_run="",group="events.k8s.io",resource="events",scope="namespace",subresource="",verb="POST",version="v1"} 7
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 99
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 1.5e+01
apiserver_request_total{code="200",verb="PATCH"} notanumber
apiserver_request_total{code="200",verb="PUT"
apiserver_request_duration_seconds_count{verb="POST",resource="pods"} 5
`
	got := fmt.Sprint(parseWrites(text))
	want := "map[PATCH pods/status:15 POST events.k8s.io/events:7 POST pods/binding:402]"
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// Any text is read without a panic.
func FuzzParseWrites(f *testing.F) {
	f.Add(`apiserver_request_total{verb="POST",resource="pods"} 3`)
	f.Add(`apiserver_request_total{verb="POST",resource="pods",subresource="binding"} 1e3` + "\n" + `apiserver_request_total{`)
	f.Add("apiserver_request_total{} ")
	f.Fuzz(func(t *testing.T, s string) { _ = parseWrites(s) })
}

// The no-op binder's rooms: first fit over nodes in name order, a full
// node skipped for good, nodes without GPUs never offered, and "" when
// no node has room.
func TestRoomsFirstFit(t *testing.T) {
	mk := func(name string, gpus int) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{kube.ResourceGPU: kube.GPUQuantity(gpus)}}}
	}
	r := newRooms([]*corev1.Node{mk("b", 2), mk("cpu", 0), mk("a", 3)})
	var got []string
	for _, want := range []int{2, 2, 1, 1, 1} {
		got = append(got, r.take(want))
	}
	// a: 3 -> 1 after the first; 2 fits b (a has 1); a's last GPU goes to
	// the first 1; then nothing is left.
	if fmt.Sprint(got) != "[a b a  ]" {
		t.Errorf("takes %q, want [a b a \"\" \"\"]", got)
	}
	if r.next != 2 {
		t.Errorf("next = %d, want 2 (both nodes full)", r.next)
	}
}

// The peak resident set is VmHWM's kB in MiB; a status without it, or
// with a line that does not read, gives 0.
func TestParseVmHWM(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
	}{
		{"Name:\tpal\nVmPeak:\t  999 kB\nVmHWM:\t  524288 kB\nVmRSS:\t 1024 kB\n", 512},
		{"Name:\tpal\nVmRSS:\t 1024 kB\n", 0},
		{"VmHWM:\t  x kB\n", 0},
		{"VmHWM:\t  2048\n", 0},
	} {
		if got := parseVmHWM(c.in); got != c.want {
			t.Errorf("parseVmHWM(%q) = %g, want %g", c.in, got, c.want)
		}
	}
}

// The scale scenario at 5,000 nodes is 20,000 one-GPU pods and 2,000
// gangs of 8 (36,000 pods), ten single pods before each gang; at 1,000
// nodes a fifth of it.
func TestScaleScenario(t *testing.T) {
	sc := scale(5000, 8)
	if sc.pods() != 36000 || sc.multiPod() != 2000 || sc.gangs != 22000 {
		t.Errorf("5,000 nodes: %d pods, %d gangs of 8, %d gangs in all; want 36000, 2000, 22000", sc.pods(), sc.multiPod(), sc.gangs)
	}
	if fmt.Sprint(sc.sizes[:12]) != "[1 1 1 1 1 1 1 1 1 1 8 1]" {
		t.Errorf("first sizes %v", sc.sizes[:12])
	}
	if sc := scale(1000, 8); sc.pods() != 7200 || sc.multiPod() != 400 {
		t.Errorf("1,000 nodes: %d pods, %d gangs of 8; want 7200 and 400", sc.pods(), sc.multiPod())
	}
}
