// Package kubejob writes the Kubernetes batch/v1 Job that runs a sweep's
// shards on a cluster: an Indexed Job of N completions whose pod K runs
// `pal sweep ... --shard K/N --out /results`, each writing its part file
// to one shared volume, where `pal sweep merge` joins them.
//
// The Job is written from the few fields it sets, not from Kubernetes'
// API types: printing a manifest needs no cluster client, and pal, which
// prints it, links no Kubernetes package at all (their initialisation
// alone costs more than a simulation). The test decodes the output
// strictly into the real batch/v1 type, and an integration test creates
// it on an apiserver, so a misspelt field cannot pass.
package kubejob

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// ResultsDir is where the results volume is mounted in each pod.
const ResultsDir = "/results"

// IndexEnv is the variable each pod's shard number comes from. The Job
// controller sets it in Indexed Jobs; the template also sets it from the
// pod's completion-index annotation, so the value does not depend on that.
const IndexEnv = "JOB_COMPLETION_INDEX"

// Binary is the research binary's path in PAL's image (hack/image.sh),
// which the pods run: the image's entrypoint is the scheduler's binary.
const Binary = "/pal"

// Spec says what Job to write.
type Spec struct {
	Name, Namespace string
	Image           string
	// Shards is the number of completions; Parallelism how many run at
	// once (0: all of them).
	Shards, Parallelism int
	// SweepArgs are pal sweep's grid flags, without --shard and --out,
	// which the Job adds.
	SweepArgs []string
	// Claim is the PersistentVolumeClaim the parts are written to
	// (ReadWriteMany when pods share it across nodes).
	Claim string
	// CPU and Memory are each pod's requests (CPU also its limit on
	// workers: the pod runs --workers of it, rounded up).
	CPU, Memory string
}

// The manifest's shape: the batch/v1 fields this Job sets, with their
// API names.
type (
	Job struct {
		APIVersion string  `yaml:"apiVersion"`
		Kind       string  `yaml:"kind"`
		Metadata   Meta    `yaml:"metadata"`
		Spec       JobSpec `yaml:"spec"`
	}
	Meta struct {
		Name      string            `yaml:"name,omitempty"`
		Namespace string            `yaml:"namespace,omitempty"`
		Labels    map[string]string `yaml:"labels,omitempty"`
	}
	JobSpec struct {
		Completions          int         `yaml:"completions"`
		Parallelism          int         `yaml:"parallelism"`
		CompletionMode       string      `yaml:"completionMode"`
		BackoffLimitPerIndex int         `yaml:"backoffLimitPerIndex"`
		Template             PodTemplate `yaml:"template"`
	}
	PodTemplate struct {
		Metadata Meta    `yaml:"metadata"`
		Spec     PodSpec `yaml:"spec"`
	}
	PodSpec struct {
		RestartPolicy   string          `yaml:"restartPolicy"`
		SecurityContext PodSecurity     `yaml:"securityContext"`
		Containers      []Container     `yaml:"containers"`
		Volumes         []ResultsVolume `yaml:"volumes"`
	}
	PodSecurity struct {
		RunAsNonRoot   bool    `yaml:"runAsNonRoot"`
		RunAsUser      int     `yaml:"runAsUser"`
		RunAsGroup     int     `yaml:"runAsGroup"`
		FSGroup        int     `yaml:"fsGroup"`
		SeccompProfile Seccomp `yaml:"seccompProfile"`
	}
	Seccomp struct {
		Type string `yaml:"type"`
	}
	Container struct {
		Name            string            `yaml:"name"`
		Image           string            `yaml:"image"`
		Command         []string          `yaml:"command"`
		Args            []string          `yaml:"args"`
		Env             []IndexVar        `yaml:"env"`
		Resources       Resources         `yaml:"resources"`
		SecurityContext ContainerSecurity `yaml:"securityContext"`
		VolumeMounts    []VolumeMount     `yaml:"volumeMounts"`
	}
	IndexVar struct {
		Name      string `yaml:"name"`
		ValueFrom struct {
			FieldRef struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
		} `yaml:"valueFrom"`
	}
	Resources struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	}
	ContainerSecurity struct {
		AllowPrivilegeEscalation bool `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   bool `yaml:"readOnlyRootFilesystem"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	}
	VolumeMount struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	}
	ResultsVolume struct {
		Name                  string `yaml:"name"`
		PersistentVolumeClaim struct {
			ClaimName string `yaml:"claimName"`
		} `yaml:"persistentVolumeClaim"`
	}
)

// Build returns the Job, or an error naming the field that is wrong.
func Build(s Spec) (*Job, error) {
	switch {
	case s.Shards < 1:
		return nil, fmt.Errorf("--shards %d: want at least 1", s.Shards)
	case s.Parallelism < 0:
		return nil, fmt.Errorf("--parallelism %d: want 0 (all shards at once) or more", s.Parallelism)
	case s.Image == "":
		return nil, fmt.Errorf("--image: empty")
	case s.Claim == "":
		return nil, fmt.Errorf("--results-claim: empty")
	case s.Name == "":
		return nil, fmt.Errorf("--job-name: empty")
	}
	cpu, ok := quantity(s.CPU)
	if !ok {
		return nil, fmt.Errorf("--pod-cpu %q: want a positive CPU quantity (2, 500m)", s.CPU)
	}
	if _, ok := quantity(s.Memory); !ok {
		return nil, fmt.Errorf("--pod-memory %q: want a positive memory quantity (2Gi)", s.Memory)
	}
	par := s.Parallelism
	if par == 0 || par > s.Shards {
		par = s.Shards
	}
	// Workers: the pod's CPUs, at least one (a fraction still runs one).
	workers := max(1, int(ceilMilli(cpu)+999)/1000)
	args := append([]string{"sweep"}, s.SweepArgs...)
	args = append(args,
		"--workers="+strconv.Itoa(workers),
		"--shard=$("+IndexEnv+")/"+strconv.Itoa(s.Shards),
		"--out="+ResultsDir)
	const uid = 65532
	labels := map[string]string{"app.kubernetes.io/name": "pal-sweep", "app.kubernetes.io/instance": s.Name}
	c := Container{
		Name: "sweep", Image: s.Image, Command: []string{Binary}, Args: args,
		Resources: Resources{
			Requests: map[string]string{"cpu": s.CPU, "memory": s.Memory},
			Limits:   map[string]string{"memory": s.Memory},
		},
		SecurityContext: ContainerSecurity{AllowPrivilegeEscalation: false, ReadOnlyRootFilesystem: true},
		VolumeMounts:    []VolumeMount{{Name: "results", MountPath: ResultsDir}},
	}
	c.SecurityContext.Capabilities.Drop = []string{"ALL"}
	env := IndexVar{Name: IndexEnv}
	env.ValueFrom.FieldRef.FieldPath = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
	c.Env = []IndexVar{env}
	vol := ResultsVolume{Name: "results"}
	vol.PersistentVolumeClaim.ClaimName = s.Claim
	return &Job{
		APIVersion: "batch/v1", Kind: "Job",
		Metadata: Meta{Name: s.Name, Namespace: s.Namespace, Labels: labels},
		Spec: JobSpec{
			Completions: s.Shards, Parallelism: par, CompletionMode: "Indexed",
			// A shard that fails twice fails alone; the others go on.
			BackoffLimitPerIndex: 2,
			Template: PodTemplate{
				Metadata: Meta{Labels: labels},
				Spec: PodSpec{
					RestartPolicy: "Never",
					// The volume is made writable for the image's user.
					SecurityContext: PodSecurity{RunAsNonRoot: true, RunAsUser: uid, RunAsGroup: uid, FSGroup: uid,
						SeccompProfile: Seccomp{Type: "RuntimeDefault"}},
					Containers: []Container{c},
					Volumes:    []ResultsVolume{vol},
				},
			},
		},
	}, nil
}

// YAML renders the Job as a manifest for kubectl apply.
func YAML(j *Job) ([]byte, error) {
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(j); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

// quantityRE is a Kubernetes resource quantity: a decimal number and a
// decimal (m, k, M, G, T, P, E), binary (Ki ... Ei) or exponent suffix.
// Compiled on first use: every pal command would pay for it at start.
var quantityRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+)?$`)
})

var quantityScale = map[string]float64{"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
	"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60}

// quantity is a positive quantity's value, and whether s is one.
func quantity(s string) (float64, bool) {
	m := quantityRE().FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	scale, ok := quantityScale[m[2]]
	if !ok { // an exponent
		e, err := strconv.Atoi(m[2][1:])
		if err != nil {
			return 0, false
		}
		scale, err = strconv.ParseFloat("1e"+strconv.Itoa(e), 64)
		if err != nil {
			return 0, false
		}
	}
	v *= scale
	return v, v > 0
}

// ceilMilli is a CPU quantity in thousandths, rounded up (as Kubernetes
// does: 0.0001 is 1m).
func ceilMilli(cpu float64) float64 {
	m := cpu * 1000
	if r := float64(int64(m)); r < m {
		return r + 1
	}
	return m
}
