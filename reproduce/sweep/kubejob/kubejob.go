// Package kubejob writes the Kubernetes batch/v1 Job that runs a sweep's
// shards on a cluster: an Indexed Job of N completions whose pod K runs
// `pal sweep ... --shard K/N --out /results`, each writing its part file
// to one shared volume, where `pal sweep merge` joins them. It is apart
// from package sweep so that the simulator does not link Kubernetes' API
// types.
package kubejob

import (
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// ResultsDir is where the results volume is mounted in each pod.
const ResultsDir = "/results"

// IndexEnv is the variable each pod's shard number comes from. The Job
// controller sets it in Indexed Jobs; the template also sets it from the
// pod's completion-index annotation, so the value does not depend on that.
const IndexEnv = "JOB_COMPLETION_INDEX"

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

// Build returns the Job, or an error naming the field that is wrong.
func Build(s Spec) (*batchv1.Job, error) {
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
	cpu, err := resource.ParseQuantity(s.CPU)
	if err != nil || cpu.Sign() <= 0 {
		return nil, fmt.Errorf("--pod-cpu %q: want a positive CPU quantity (2, 500m)", s.CPU)
	}
	mem, err := resource.ParseQuantity(s.Memory)
	if err != nil || mem.Sign() <= 0 {
		return nil, fmt.Errorf("--pod-memory %q: want a positive memory quantity (2Gi)", s.Memory)
	}
	par := s.Parallelism
	if par == 0 || par > s.Shards {
		par = s.Shards
	}
	// Workers: the pod's CPUs, at least one (a fraction still runs one).
	workers := max(1, int((cpu.MilliValue()+999)/1000))
	args := append([]string{"sweep"}, s.SweepArgs...)
	args = append(args,
		"--workers="+strconv.Itoa(workers),
		"--shard=$("+IndexEnv+")/"+strconv.Itoa(s.Shards),
		"--out="+ResultsDir)
	n := int32(s.Shards)
	p := int32(par)
	mode := batchv1.IndexedCompletion
	perIndex := int32(2)
	nonRoot, noEscalation, readOnly := true, false, true
	uid := int64(65532)
	labels := map[string]string{"app.kubernetes.io/name": "pal-sweep", "app.kubernetes.io/instance": s.Name}
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			Completions:    &n,
			Parallelism:    &p,
			CompletionMode: &mode,
			// A shard that fails twice fails alone; the others go on.
			BackoffLimitPerIndex: &perIndex,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot: &nonRoot, RunAsUser: &uid, RunAsGroup: &uid,
						// The volume is made writable for the image's user.
						FSGroup:        &uid,
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:  "sweep",
						Image: s.Image,
						Args:  args,
						Env: []corev1.EnvVar{{Name: IndexEnv, ValueFrom: &corev1.EnvVarSource{
							FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: mem},
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: &noEscalation, ReadOnlyRootFilesystem: &readOnly,
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "results", MountPath: ResultsDir}},
					}},
					Volumes: []corev1.Volume{{Name: "results", VolumeSource: corev1.VolumeSource{
						PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: s.Claim}}}},
				},
			},
		},
	}
	return job, nil
}

// YAML renders the Job as a manifest for kubectl apply.
func YAML(j *batchv1.Job) ([]byte, error) {
	b, err := yaml.Marshal(j)
	if err != nil {
		return nil, err
	}
	return b, nil
}
