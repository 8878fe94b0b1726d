package kube

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/palsched/pal/kube/podspec"
	"github.com/palsched/pal/kube/state"
)

// The annotations and resource PAL reads and writes on pods (package
// podspec holds them; they are named here too, as the driver's API).
const (
	AnnGang       = podspec.AnnGang
	AnnGangSize   = podspec.AnnGangSize
	AnnClass      = podspec.AnnClass
	AnnModel      = podspec.AnnModel
	AnnIterations = podspec.AnnIterations
	AnnGPUIndices = podspec.AnnGPUIndices
	AnnBindInfo   = podspec.AnnBindInfo
	AnnSlowdown   = podspec.AnnSlowdown

	AnnBackfillHead    = podspec.AnnBackfillHead
	AnnBackfillPromise = podspec.AnnBackfillPromise

	ResourceGPU = podspec.ResourceGPU

	LabelCoschedPodGroup = podspec.LabelCoschedPodGroup
	NativePodGroupAPI    = podspec.NativePodGroupAPI
)

// CoschedPodGroups is the scheduler-plugins PodGroup resource.
var CoschedPodGroups = podspec.CoschedPodGroups

// BindInfo is the placement of a whole gang, stored on every member.
type BindInfo = podspec.BindInfo

// PodBind is one member's node and device indices.
type PodBind = podspec.PodBind

// ParseBindInfo reads AnnBindInfo.
func ParseBindInfo(s string) (*BindInfo, error) { return podspec.ParseBindInfo(s) }

// FormatIndices writes device indices as "0,3".
func FormatIndices(g []int) string { return podspec.FormatIndices(g) }

// ParseIndices reads AnnGPUIndices: distinct non-negative integers.
func ParseIndices(s string) ([]int, error) { return podspec.ParseIndices(s) }

// PodGPUs is the pod's nvidia.com/gpu request (see podspec.PodGPUs).
func PodGPUs(p *corev1.Pod) (int, error) { return podspec.PodGPUs(p) }

// NodeGPUs is a node's allocatable nvidia.com/gpu (0: not a GPU node).
func NodeGPUs(n *corev1.Node) int { return podspec.NodeGPUs(n) }

// GPUQuantity is n GPUs as a resource quantity.
func GPUQuantity(n int) resource.Quantity { return podspec.GPUQuantity(n) }

// The round's names for the state's types.
type (
	gang     = state.Gang
	snapshot = state.Snapshot
)

const (
	ownerForeign = state.OwnerForeign
	ownerLeaving = state.OwnerLeaving
)
