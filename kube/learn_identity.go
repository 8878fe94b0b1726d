package kube

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/palsched/pal/internal/quote"
)

// A reused node name. What is learned of a GPU is kept by its node's
// name and device index, and a name can come back on other hardware:
// cloud providers name nodes after their private address (ip-10-0-1-23),
// and a new VM that gets an address a deleted one had gets its name too,
// often well within learnForgetAfter. Without a check the new VM's GPUs
// would inherit the old ones' learned slowdowns, and its quarantine: a
// wrong speed until jobs relearn it, and a healthy GPU placed last.
//
// So the learner records each node's hardware identity (nodeIdentity)
// and, when a node of a recorded name reports another one, drops what was
// learned of that node (its beliefs, quarantine and carried DCGM
// slowdowns: forgetNodes, the path by which an absent node is
// forgotten), logs it, and posts a NodeIdentityChanged event on the
// Node. Its GPUs start again from the profile. The identities are kept in
// the learned ConfigMap (AnnNodeIDs), so that a node replaced while no
// scheduler ran is found at the next start; a node it does not name (a
// ConfigMap an older scheduler wrote, one left out for size, or a
// malformed annotation) is recorded as it is found, with nothing
// dropped.
//
// The check runs when the scheduler's store sees a node added or a
// node's system UUID or machine ID change (state.Store.NodeInfoGeneration),
// not every round, and before the round bins its scores: a replaced
// node's first round already places on the profile.
//
// A GPU swapped in a repair on a machine that keeps its system UUID (a
// bare-metal node) is not seen: that needs each GPU's own identity
// (DCGM's UUID label), which this check does not use (see
// docs/learning-kubernetes.md).

const (
	// AnnNodeIDs, on the learned ConfigMap, is the hardware identity of
	// each node the learned state names, as nodeIdentity makes it:
	// "NODE=u:DIGEST,NODE=m:DIGEST" (sorted by name; "" when none is
	// known). A reader that does not know it ignores it.
	AnnNodeIDs = "pal.io/node-ids"
	// nodeIDsBytes bounds AnnNodeIDs' value (a ConfigMap's annotations
	// are 256 KiB together, pal.io/absent-since's 64 KiB among them):
	// beyond it the nodes last by name are left out, and after a restart
	// they are recorded as found, unchecked across that restart. It holds
	// some 2,500 names of the ip-10-0-123-234 kind.
	nodeIDsBytes = 64 << 10
	// ReasonNodeIdentityChanged is the Normal event on a node that
	// reports another machine than the one what was learned of it was
	// learned on: what was learned of it is dropped.
	ReasonNodeIdentityChanged = "NodeIdentityChanged"
)

// nodeIdentity is the hardware identity node n reports: a digest of its
// system UUID (the SMBIOS product UUID: a new VM has a new one, and a
// reboot, a kubelet restart or a reinstall keeps it), "u:DIGEST", else of
// its machine ID (/etc/machine-id: new with a new VM of most images),
// "m:DIGEST", else "" (unknown: the node is not checked). The digest
// (48 bits of SHA-256, base64url) keeps AnnNodeIDs small and free of
// what a kubelet may write there.
//
// It is not the Node object's UID, which is the object's, not the
// machine's: a node drained, deleted and rejoined (as a repair is often
// done) comes back as a new object with a new UID on the same machine
// and GPUs, and must keep what was learned of them; and a new machine
// that registers under a name whose Node object is still there takes
// that object over (the kubelet adopts an existing Node of its name),
// UID and all.
func nodeIdentity(n *corev1.Node) string {
	kind, v := "u:", strings.ToLower(strings.TrimSpace(n.Status.NodeInfo.SystemUUID))
	if v == "" {
		kind, v = "m:", strings.ToLower(strings.TrimSpace(n.Status.NodeInfo.MachineID))
	}
	if v == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(v))
	return kind + base64.RawURLEncoding.EncodeToString(sum[:6])
}

// nodeIDLen is the length of what nodeIdentity returns (but "").
const nodeIDLen = 2 + 8

// learnNodeIDs records the hardware identity of every node the store
// has, when a node was added or a node's identity changed since it last
// looked (else it returns at once), and drops what was learned of a node
// that reports another identity than the one recorded for its name (see
// above). A node that reports none, or an identity of another kind (a
// system UUID where a machine ID was recorded), is not checked; the
// recorded one is kept, or replaced. It runs before the round's binning,
// and reads the learned ConfigMap first if no round has (loadLearned).
func (s *Scheduler) learnNodeIDs() {
	L := s.learn
	gen := s.state.NodeInfoGeneration()
	if L.loaded && gen == L.idGen {
		return
	}
	if !L.loaded {
		L.loaded = true
		s.loadLearned()
	}
	L.idGen = gen
	type change struct{ node, was, now string }
	var changed []change
	recorded, absent := false, false
	for n := range s.state.Nodes() {
		id := nodeIdentity(n)
		if id == "" {
			continue
		}
		was, ok := L.ids[n.Name]
		if was == id {
			continue
		}
		L.ids[n.Name], recorded = id, true
		if ok && was[:2] == id[:2] {
			changed = append(changed, change{n.Name, was, id})
		}
	}
	for n := range L.ids {
		absent = absent || s.state.Node(n) == nil
	}
	if absent {
		// A name no Node holds and nothing learned names needs no
		// identity: the record does not grow with every name seen.
		named := L.namedNodes()
		maps.DeleteFunc(L.ids, func(n, _ string) bool {
			if !named[n] && s.state.Node(n) == nil {
				recorded = true
				return true
			}
			return false
		})
	}
	if recorded && L.loadErr == nil {
		// Written with the next write in any case; not the cause of one
		// over a learned ConfigMap that could not be read.
		L.dirty = true
	}
	if len(changed) == 0 {
		return
	}
	// Beliefs the learner holds that known lacks go to known first: the
	// learner is made again below, from known.
	L.syncKnown()
	gone := make(map[string]bool, len(changed))
	for _, c := range changed {
		gone[c.node] = true
	}
	type held struct {
		devices int
		quar    []int
	}
	had := map[string]*held{}
	for _, c := range changed {
		had[c.node] = &held{}
	}
	for k := range L.known {
		if h := had[k.Node]; h != nil {
			h.devices++
		}
	}
	for k := range L.quarantined {
		if h := had[k.Node]; h != nil {
			h.quar = append(h.quar, k.Index)
		}
	}
	s.dropNodeSeries(gone)
	L.forgetNodes(gone)
	if L.learner != nil {
		// The learner holds the old beliefs of the node's GPUs: the
		// round's binning makes a new one from known (learnReset).
		L.learner = nil
		s.scoresKey = ""
	}
	slices.SortFunc(changed, func(a, b change) int { return strings.Compare(a.node, b.node) })
	for _, c := range changed {
		h := had[c.node]
		what := "system UUID"
		if c.now[0] == 'm' {
			what = "machine ID"
		}
		q := ""
		if len(h.quar) > 0 {
			slices.Sort(h.quar)
			gpus := "GPU"
			if len(h.quar) > 1 {
				gpus += "s"
			}
			q = fmt.Sprintf(" and the quarantine of %s %s", gpus, FormatIndices(h.quar))
		}
		msg := fmt.Sprintf("node %s reports another %s than the one recorded when its GPUs' speeds were learned: another machine under the same name (a reused node name, a replaced VM). What was learned of its GPUs (%d devices)%s is dropped; they start again from the profile",
			c.node, what, h.devices, q)
		s.log.Info("node is another machine under the same name; what was learned of it is dropped", "node", c.node, "identity", what, "was", c.was, "now", c.now,
			"devices", h.devices, "quarantined", FormatIndices(h.quar))
		s.events.post(nodeRef(c.node), corev1.EventTypeNormal, ReasonNodeIdentityChanged, "Learning", msg)
	}
}

// nodeIDsOf are the identities of the nodes the learned state names
// (the ones AnnNodeIDs keeps).
func (L *learnStage) nodeIDsOf() map[string]string {
	named := L.namedNodes()
	out := make(map[string]string, len(named))
	for n := range named {
		if id, ok := L.ids[n]; ok {
			out[n] = id
		}
	}
	return out
}

// formatNodeIDs is AnnNodeIDs' value, at most most bytes: the nodes by
// name; what does not fit (the last by name) is left out.
func formatNodeIDs(ids map[string]string, most int) string {
	var b strings.Builder
	for _, n := range slices.Sorted(maps.Keys(ids)) {
		add := len(n) + 1 + len(ids[n])
		if b.Len() > 0 {
			add++
		}
		if b.Len()+add > most {
			break
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(ids[n])
	}
	return b.String()
}

// parseNodeIDs reads AnnNodeIDs' value (formatNodeIDs' form). Errors
// name the entry by its place.
func parseNodeIDs(v string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(v) == "" {
		return out, nil
	}
	const most = 1 << 20 // nodes: a bound on what a crafted value can ask for
	if strings.Count(v, ",") >= most {
		return nil, fmt.Errorf("more than %d entries", most)
	}
	for i, p := range strings.Split(v, ",") {
		n, id, ok := strings.Cut(p, "=")
		bad := func(why string) error {
			return fmt.Errorf("entry %d %s: %s; want NODE=u:DIGEST or NODE=m:DIGEST", i+1, quote.Value(p), why)
		}
		switch {
		case !ok:
			return nil, bad("no =")
		case n == "" || strings.ContainsAny(n, " \t\n;,="):
			return nil, bad("not a node name")
		case len(id) != nodeIDLen || id[:2] != "u:" && id[:2] != "m:":
			return nil, bad("not an identity")
		}
		if _, err := base64.RawURLEncoding.DecodeString(id[2:]); err != nil {
			return nil, bad("not an identity")
		}
		if _, dup := out[n]; dup {
			return nil, bad("a node named twice")
		}
		out[n] = id
	}
	return out, nil
}
