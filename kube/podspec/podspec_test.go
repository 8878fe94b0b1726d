package podspec

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/palsched/pal/workload"
)

func container(name string, requests, limits string) corev1.Container {
	c := corev1.Container{Name: name}
	if requests != "" {
		c.Resources.Requests = corev1.ResourceList{ResourceGPU: resource.MustParse(requests)}
	}
	if limits != "" {
		c.Resources.Limits = corev1.ResourceList{ResourceGPU: resource.MustParse(limits)}
	}
	return c
}

func podOf(cs ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{Containers: cs}}
}

// Each container's value is checked before it is added: the pod of 1,025
// containers of 9e15 GPUs each (which kube-apiserver 1.37 admits, and
// whose sum wraps an int64 negative) is refused at its first container,
// naming the field; so are negative and fractional values, a total
// beyond any node, and the two 5e18 containers the fake clientset takes.
// Init containers count as the kubelet counts them: the largest of a
// plain init container (plus the sidecars started before it) and the
// sum of the containers and sidecars.
func TestPodGPUs(t *testing.T) {
	many := func(n int, v string) *corev1.Pod {
		p := podOf()
		for i := range n {
			p.Spec.Containers = append(p.Spec.Containers, container(fmt.Sprintf("c%d", i), "", v))
		}
		return p
	}
	always := corev1.ContainerRestartPolicyAlways
	sidecar := container("side", "1", "")
	sidecar.RestartPolicy = &always
	for _, c := range []struct {
		name string
		p    *corev1.Pod
		want int
		err  string
	}{
		{"limits", podOf(container("a", "", "2"), container("b", "", "1")), 3, ""},
		{"requests over limits", podOf(container("a", "1", "4")), 1, ""},
		{"none", podOf(container("a", "", "")), 0, ""},
		{"hostile 1,025 x 9e15", many(1025, "9000000000000000"), 0,
			"spec.containers[0] (c0) resources.limits[nvidia.com/gpu]: 9000000000000000 is beyond any node (at most 1024 GPUs per node)"},
		{"two 5e18", many(2, "5e18"), 0, "spec.containers[0] (c0) resources.limits[nvidia.com/gpu]: 5000000000000000000 is beyond any node"},
		{"negative", podOf(container("a", "-1", "")), 0, "spec.containers[0] (a) resources.requests[nvidia.com/gpu]: -1 is negative"},
		{"fraction", podOf(container("a", "500m", "")), 0, "spec.containers[0] (a) resources.requests[nvidia.com/gpu]: 500m is not a whole number of GPUs"},
		{"1,025 x 1", many(1025, "1"), 0, "spec.containers[1024]: the pod's containers ask more than 1024 GPUs in all"},
		{"1,024 x 1", many(1024, "1"), 1024, ""},
		{"init larger", &corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{container("i", "4", "")},
			Containers: []corev1.Container{container("a", "2", "")}}}, 4, ""},
		{"sidecar adds", &corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{sidecar, container("i", "2", "")},
			Containers: []corev1.Container{container("a", "2", "")}}}, 3, ""},
		{"init hostile", &corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{container("i", "9e15", "")}}}, 0,
			"spec.initContainers[0] (i) resources.requests[nvidia.com/gpu]: 9000000000000000 is beyond any node"},
	} {
		got, err := PodGPUs(c.p)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %d, %v; want an error with %q", c.name, got, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%s: %d, %v; want %d", c.name, got, err, c.want)
		}
	}
}

func TestParseIndices(t *testing.T) {
	for in, want := range map[string]string{"0,3": "[0 3]", "3, 1,2": "[1 2 3]", "7": "[7]"} {
		got, err := ParseIndices(in)
		if err != nil || fmt.Sprint(got) != want {
			t.Errorf("ParseIndices(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for in, want := range map[string]string{"": "want device indices", "1,1": "index 1 twice", "-1": "want device",
		"a": "want device", "2,0,2": "index 2 twice"} {
		if _, err := ParseIndices(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseIndices(%q) = %v, want %q", in, err, want)
		}
	}
	// A hostile value is quoted cut short.
	long := strings.Repeat("1,", 10000) + "x"
	if _, err := ParseIndices(long); err == nil || len(err.Error()) > 200 {
		t.Errorf("error for a 20 kB value: %d bytes", len(err.Error()))
	}
}

// BenchmarkParseIndices40000 reads an annotation of 40,000 indices (a
// hostile one: no node has that many), which took 753 ms when each
// index was checked against all the ones before it.
func BenchmarkParseIndices40000(b *testing.B) {
	idx := make([]int, 40000)
	for i := range idx {
		idx[i] = (i * 7919) % 40000
	}
	s := FormatIndices(idx)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseIndices(s); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzRead reads a pod built from arbitrary resources and pal.io
// annotations: an error or a spec within bounds, never a panic, and an
// error's message short whatever the input's size.
func FuzzRead(f *testing.F) {
	f.Add("2", "", 1, "g", "3", "BERT", "1e6", "A", "0,1", false)
	f.Add("9000000000000000", "", 1025, "", "", "", "", "", "", true)
	f.Add("-3", "500m", 2, "g", "0", "nosuch", "-1", "Z", "1,1", false)
	f.Add("5e18", "5e18", 2, "", "2", "", "NaN", "", "x", true)
	f.Add("1", "", 1, "", "", "resnet50", "1e16", "d", "", false)
	// An annotation of 8 kB of invalid or control bytes (which %q writes
	// four characters each), in each place a value is read from.
	bad, ctl := strings.Repeat("\xff", 8000), strings.Repeat("\x01", 8000)
	f.Add(bad, "", 1, "g", "2", "", "", "", "", false)
	f.Add("1", "", 1, bad, "2", "", "", "", "", false)
	f.Add("1", "", 1, "g", ctl, "", "", "", "", false)
	f.Add("1", "", 1, "", "", bad, "", "", "", false)
	f.Add("1", "", 1, "", "", "BERT", ctl, "", "", false)
	f.Add("1", "", 1, "", "", "", "", bad, "", false)
	f.Add("1", "", 1, "", "", "", "", "", ctl, false)
	f.Add("1", "", 1, ctl, bad, "", "", "", "", true)
	f.Fuzz(func(t *testing.T, req, lim string, n int, gang, size, model, iters, class, idx string, job bool) {
		if n < 0 || n > 2000 {
			return
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Annotations: map[string]string{}}}
		for i := range n {
			c := corev1.Container{Name: "c" + strconv.Itoa(i)}
			if q, err := resource.ParseQuantity(req); err == nil {
				c.Resources.Requests = corev1.ResourceList{ResourceGPU: q}
			}
			if q, err := resource.ParseQuantity(lim); err == nil {
				c.Resources.Limits = corev1.ResourceList{ResourceGPU: q}
			}
			p.Spec.Containers = append(p.Spec.Containers, c)
		}
		for k, v := range map[string]string{AnnGang: gang, AnnGangSize: size, AnnModel: model, AnnIterations: iters, AnnClass: class, AnnGPUIndices: idx} {
			if v != "" {
				p.Annotations[k] = v
			}
		}
		r := &Reader{Models: workload.DefaultModels()}
		if job {
			yes := true
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: gang, Controller: &yes}}
			r.Job = func(*corev1.Pod) (string, int) { return "ns/job:" + gang, len(size) }
		}
		s, err := r.Read(p)
		if err != nil {
			if len(err.Error()) > 600 || !utf8.ValidString(err.Error()) && utf8.ValidString(req+lim+gang+size+model+iters+class) {
				t.Fatalf("error of %d bytes: %.200s", len(err.Error()), err)
			}
			return
		}
		if s.GPUs < 1 || s.GPUs > MaxNodeGPUs || s.Size < 1 || s.Size > 1<<16 || !(s.Iters > 0) || s.Iters > 1e15 {
			t.Fatalf("spec out of bounds: %+v", s)
		}
		if ix, err := ParseIndices(idx); err == nil && !slices.IsSorted(ix) {
			t.Fatalf("indices %v not sorted", ix)
		}
	})
}
