// Package devcluster runs a real Kubernetes control plane on loopback for
// trying PAL and for its integration tests: etcd, kube-apiserver and
// kube-controller-manager built from the Go module proxy by
// hack/testbin.sh, and kwok faking the nodes and the pod lifecycle. Nothing listens on or connects to anything but
// 127.0.0.1.
package devcluster

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
)

// Versions of the control plane hack/testbin.sh builds; the cache
// directory is named after them.
const (
	K8sVersion  = "1.37.2"
	EtcdVersion = "3.7.3"
	KwokVersion = "0.8.0"
)

// Stages is the kwok stages file: nodes become Ready, bound pods run, a
// pod with pal.io/finish-after succeeds then, deleted pods go at once.
//
//go:embed stages.yaml
var Stages []byte

// AnnFinishAfter on a running pod makes kwok finish it (Succeeded) after
// a duration ("90s") or at a time (RFC 3339); see stages.yaml.
const AnnFinishAfter = "pal.io/finish-after"

// FakeNodeAnnotation marks the nodes kwok manages.
const FakeNodeAnnotation = "kwok.x-k8s.io/node"

// BinDir is where hack/testbin.sh puts the binaries: $PAL_TESTBIN, or the
// versioned directory under the user's cache directory.
func BinDir() string {
	if d := os.Getenv("PAL_TESTBIN"); d != "" {
		return d
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "pal", "testbin", fmt.Sprintf("k8s-%s_etcd-%s_kwok-%s", K8sVersion, EtcdVersion, KwokVersion))
}

// Binaries are the programs Up runs, all in BinDir().
var Binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kwok"}

// Controllers are the kube-controller-manager controllers the dev cluster
// runs: workloads (a batch/v1 Job creates its pods and recreates evicted
// ones; Deployments, StatefulSets, CronJobs), the garbage collector (a
// deleted Job's pods go), disruption budgets (the Eviction API reads
// them), namespaces and service accounts. Not the node lifecycle
// controller: kwok's nodes send no heartbeats, and it would taint them
// and evict every pod.
var Controllers = []string{"job-controller", "cronjob-controller", "deployment-controller", "replicaset-controller",
	"statefulset-controller", "garbage-collector-controller", "ttl-after-finished-controller", "disruption-controller",
	"namespace-controller", "serviceaccount-controller"}

// SystemNamespace is where pal-kube scheduler keeps its leader Lease and reads
// its variability ConfigMap (kube.DefaultConfig's namespace); Up creates it.
const SystemNamespace = "pal-system"

// FindBins checks that the binaries Up runs are in dir.
func FindBins(dir string) error {
	var missing []string
	for _, b := range Binaries {
		if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.Mode()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s missing in %s (build them with hack/testbin.sh)", strings.Join(missing, ", "), dir)
	}
	return nil
}

// Options says what to start.
type Options struct {
	Dir string // state, logs, kubeconfig; created if missing
	Bin string // where the binaries are (default BinDir())
	// Nodes fake GPU nodes of GPUsPerNode each, named NodePrefix-000 ...
	Nodes, GPUsPerNode int
	NodePrefix         string
	// NativeGangs serves Kubernetes' PodGroup API (NativeGangArgs) and
	// installs the scheduler-plugins PodGroup CRD (PodGroupCRD).
	NativeGangs bool
	// APIServerArgs are more kube-apiserver flags, "--KEY=VALUE" (see
	// ParseAPIServerArg), after Up's own and NativeGangArgs.
	APIServerArgs []string
}

// Cluster is a running dev cluster.
type Cluster struct {
	Dir        string
	Kubeconfig string
	Server     string // https://127.0.0.1:PORT
	Token      string // the admin token
	procs      []proc
}

type proc struct {
	Name string   `json:"name"`
	PID  int      `json:"pid"`
	Exe  string   `json:"exe"`
	Args []string `json:"-"` // how it was started (Restart starts it so again)
}

// Up starts etcd, kube-apiserver, kube-controller-manager and kwok on free
// loopback ports, writes DIR/kubeconfig, creates the namespace pal-system
// and the fake GPU nodes and waits until they are Ready. The processes run in their own process groups so they outlive
// the caller (`pal-kube dev-cluster up`); Down stops exactly them.
func Up(ctx context.Context, o Options) (c *Cluster, err error) {
	if o.Bin == "" {
		o.Bin = BinDir()
	}
	if err := FindBins(o.Bin); err != nil {
		return nil, err
	}
	if o.NodePrefix == "" {
		o.NodePrefix = "gpu-node"
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "pids.json")); err == nil {
		return nil, fmt.Errorf("%s already has a dev cluster (pids.json); run down first", dir)
	}
	for _, d := range []string{"etcd", "certs", "logs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	c = &Cluster{Dir: dir, Kubeconfig: filepath.Join(dir, "kubeconfig")}
	defer func() {
		if err != nil {
			_ = c.Down()
		}
	}()
	ports, err := freePorts(5)
	if err != nil {
		return nil, err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	c.Server = fmt.Sprintf("https://127.0.0.1:%d", ports[2])
	if err := c.start("etcd", filepath.Join(o.Bin, "etcd"), "--name", "pal", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "pal="+peerURL, "--unsafe-no-fsync", "--log-level", "warn"); err != nil {
		return c, err
	}
	if err := writeKeys(dir); err != nil {
		return c, err
	}
	tok := make([]byte, 16)
	_, _ = rand.Read(tok)
	c.Token = hex.EncodeToString(tok)
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(c.Token+",pal-admin,pal-admin,system:masters\n"), 0o600); err != nil {
		return c, err
	}
	var extra []string
	if o.NativeGangs {
		extra = append(extra, NativeGangArgs...)
	}
	for _, a := range o.APIServerArgs {
		f, err := ParseAPIServerArg(a)
		if err != nil {
			return c, err
		}
		extra = append(extra, f)
	}
	if err := c.start("kube-apiserver", filepath.Join(o.Bin, "kube-apiserver"), append([]string{
		"--etcd-servers", etcdURL, "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(ports[2]), "--endpoint-reconciler-type", "none",
		"--cert-dir", filepath.Join(dir, "certs"), "--token-auth-file", filepath.Join(dir, "tokens.csv"),
		"--authorization-mode", "RBAC", "--disable-admission-plugins", "ServiceAccount,TaintNodesByCondition",
		"--service-account-issuer", c.Server, "--service-account-key-file", filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file", filepath.Join(dir, "sa.key"),
		"--service-cluster-ip-range", "10.0.0.0/24", "--max-requests-inflight", "2000", "--max-mutating-requests-inflight", "1000"}, extra...)...); err != nil {
		return c, err
	}
	if err := c.writeKubeconfig(); err != nil {
		return c, err
	}
	if err := c.waitReady(ctx, 90*time.Second); err != nil {
		return c, err
	}
	if o.NativeGangs {
		if err := InstallPodGroupCRD(ctx, c.RestConfig()); err != nil {
			return c, err
		}
	}
	if err := c.start("kube-controller-manager", filepath.Join(o.Bin, "kube-controller-manager"),
		"--kubeconfig", c.Kubeconfig, "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(ports[4]),
		"--leader-elect=false", "--controllers", strings.Join(Controllers, ","),
		"--cert-dir", filepath.Join(dir, "certs", "kcm"), "--concurrent-job-syncs", "10"); err != nil {
		return c, err
	}
	cs, err := c.Client()
	if err != nil {
		return c, err
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: SystemNamespace}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return c, fmt.Errorf("create namespace %s: %v", SystemNamespace, err)
	}
	if err := c.waitHealthy(ctx, "kube-controller-manager", fmt.Sprintf("https://127.0.0.1:%d/healthz", ports[4]), 60*time.Second); err != nil {
		return c, err
	}
	stages := filepath.Join(dir, "kwok-stages.yaml")
	if err := os.WriteFile(stages, Stages, 0o644); err != nil {
		return c, err
	}
	if err := c.startKwok(ctx, filepath.Join(o.Bin, "kwok"), "--config", stages, "--kubeconfig", c.Kubeconfig,
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector", FakeNodeAnnotation+"=fake",
		"--server-address", fmt.Sprintf("127.0.0.1:%d", ports[3]), "--node-ip", "127.0.0.1"); err != nil {
		return c, err
	}
	if o.Nodes > 0 {
		if err := AddNodes(ctx, cs, o.NodePrefix, o.Nodes, o.GPUsPerNode); err != nil {
			return c, err
		}
	}
	return c, nil
}

// startKwok starts kwok and watches its first seconds: kwok 0.8.0 can
// die as it starts ("fatal error: concurrent map writes" while it builds
// its CEL environment, seen once in CI), and a dev cluster whose kwok is
// gone never makes a node Ready. A kwok that exits within kwokSettle is
// started again, twice at most; one still running then is kept, as before.
func (c *Cluster) startKwok(ctx context.Context, exe string, args ...string) error {
	for try := 1; ; try++ {
		if err := c.start("kwok", exe, args...); err != nil {
			return err
		}
		var pid int
		for _, p := range c.procs {
			if p.Name == "kwok" {
				pid = p.PID
			}
		}
		if alive(ctx, pid, kwokSettle) {
			return nil
		}
		if try == 3 {
			return fmt.Errorf("kwok exited within %v of starting, %d times (see %s)", kwokSettle, try, filepath.Join(c.Dir, "logs", "kwok.log"))
		}
		if f, err := os.OpenFile(filepath.Join(c.Dir, "logs", "kwok.log"), os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			fmt.Fprintf(f, "devcluster: kwok (pid %d) exited as it started; starting it again\n", pid)
			f.Close()
		}
	}
}

// kwokSettle is how long a kwok just started must keep running to be
// kept (it died, the one time seen, within a second of starting).
const kwokSettle = 3 * time.Second

// alive reports whether process pid still runs after d (false as soon as
// it is gone).
func alive(ctx context.Context, pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if _, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err != nil {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}

func (c *Cluster) start(name, exe string, args ...string) error {
	logf, err := os.OpenFile(filepath.Join(c.Dir, "logs", name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %v", name, err)
	}
	go func() { _ = cmd.Wait() }() // reap it if it dies while we run
	p := proc{Name: name, PID: cmd.Process.Pid, Exe: exe, Args: args}
	for i := range c.procs {
		if c.procs[i].Name == name {
			c.procs[i] = p // started again (Restart)
			return c.savePIDs()
		}
	}
	c.procs = append(c.procs, p)
	return c.savePIDs()
}

// KillAPIServer kills kube-apiserver with SIGKILL, as a crash would: no
// request in flight is answered, no watch is closed cleanly. The state
// stays in etcd; StartAPIServer brings it back on the same address.
func (c *Cluster) KillAPIServer() error {
	for _, p := range c.procs {
		if p.Name != "kube-apiserver" {
			continue
		}
		if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil {
			return fmt.Errorf("kill kube-apiserver (pid %d): %v", p.PID, err)
		}
		for range 100 {
			if _, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p.PID)); err != nil {
				return nil
			}
			time.Sleep(50 * time.Millisecond)
		}
		return fmt.Errorf("kube-apiserver (pid %d) still runs 5 s after SIGKILL", p.PID)
	}
	return fmt.Errorf("this cluster started no kube-apiserver")
}

// StartAPIServer starts kube-apiserver again as Up started it (same
// port, certificates and etcd) and waits until it is ready.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	for _, p := range c.procs {
		if p.Name != "kube-apiserver" {
			continue
		}
		if err := c.start(p.Name, p.Exe, p.Args...); err != nil {
			return err
		}
		return c.waitReady(ctx, 90*time.Second)
	}
	return fmt.Errorf("this cluster started no kube-apiserver")
}

func (c *Cluster) savePIDs() error {
	b, _ := json.MarshalIndent(c.procs, "", "  ")
	return os.WriteFile(filepath.Join(c.Dir, "pids.json"), b, 0o644)
}

// Down stops the processes this cluster started (by the pids it
// recorded, each checked to still run the recorded binary), newest
// first, and removes pids.json. State in the directory is kept.
func (c *Cluster) Down() error {
	var errs []error
	for i := len(c.procs) - 1; i >= 0; i-- {
		if err := stop(c.procs[i]); err != nil {
			errs = append(errs, err)
		}
	}
	c.procs = nil
	_ = os.Remove(filepath.Join(c.Dir, "pids.json"))
	return errors.Join(errs...)
}

// Down stops the dev cluster recorded in dir.
func Down(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "pids.json"))
	if err != nil {
		return fmt.Errorf("no dev cluster recorded in %s: %v", dir, err)
	}
	c := &Cluster{Dir: dir}
	if err := json.Unmarshal(b, &c.procs); err != nil {
		return fmt.Errorf("%s: %v", filepath.Join(dir, "pids.json"), err)
	}
	return c.Down()
}

func stop(p proc) error {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p.PID))
	if err != nil || filepath.Base(strings.TrimSuffix(exe, " (deleted)")) != filepath.Base(p.Exe) {
		return nil // already gone, or the pid now belongs to something else
	}
	_ = syscall.Kill(p.PID, syscall.SIGTERM)
	for range 100 {
		if err := syscall.Kill(p.PID, 0); err != nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop %s (pid %d): %v", p.Name, p.PID, err)
	}
	return nil
}

// PID is the process id of a component this cluster started (etcd,
// kube-apiserver, kube-controller-manager, kwok), 0 if none.
func (c *Cluster) PID(name string) int {
	for _, p := range c.procs {
		if p.Name == name {
			return p.PID
		}
	}
	return 0
}

// RestConfig is an admin client config for the cluster.
func (c *Cluster) RestConfig() *rest.Config {
	return &rest.Config{Host: c.Server, BearerToken: c.Token, QPS: 500, Burst: 1000,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
}

// Client is an admin clientset.
func (c *Cluster) Client() (*kubernetes.Clientset, error) {
	return kubernetes.NewForConfig(c.RestConfig())
}

func (c *Cluster) writeKubeconfig() error {
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: pal-dev
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: pal-admin
  user:
    token: %s
contexts:
- name: pal-dev
  context: {cluster: pal-dev, user: pal-admin}
current-context: pal-dev
`, c.Server, c.Token)
	return os.WriteFile(c.Kubeconfig, []byte(kc), 0o600)
}

// LoadKubeconfig reads a kubeconfig into a client config.
func LoadKubeconfig(path string) (*rest.Config, error) {
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{}).ClientConfig()
}

func (c *Cluster) waitReady(ctx context.Context, limit time.Duration) error {
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(limit)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.Server+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+c.Token)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("kube-apiserver not ready after %v (see %s)", limit, filepath.Join(c.Dir, "logs"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitHealthy polls a component's /healthz until it answers 200.
func (c *Cluster) waitHealthy(ctx context.Context, name, url string, limit time.Duration) error {
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(limit)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s not healthy after %v (see %s)", name, limit, filepath.Join(c.Dir, "logs", name+".log"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// AddNodes creates n fake GPU nodes named prefix-000 ... with gpus
// nvidia.com/gpu each, and waits until kwok has made them Ready.
func AddNodes(ctx context.Context, cs kubernetes.Interface, prefix string, n, gpus int) error {
	width := max(3, len(strconv.Itoa(n-1)))
	var wg sync.WaitGroup
	errc := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := range n {
		name := fmt.Sprintf("%s-%0*d", prefix, width, i)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errc <- addNode(ctx, cs, name, gpus)
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			return err
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		ready := 0
		for _, nd := range list.Items {
			for _, cd := range nd.Status.Conditions {
				if cd.Type == corev1.NodeReady && cd.Status == corev1.ConditionTrue && strings.HasPrefix(nd.Name, prefix+"-") {
					ready++
				}
			}
		}
		if ready >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d fake nodes Ready after 60 s (is kwok running?)", ready, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func addNode(ctx context.Context, cs kubernetes.Interface, name string, gpus int) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
		Annotations: map[string]string{FakeNodeAnnotation: "fake"},
		Labels:      map[string]string{"kubernetes.io/hostname": name, "type": "kwok"}}}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create node %s: %v", name, err)
	}
	res := corev1.ResourceList{
		"nvidia.com/gpu": *resourceInt(gpus), corev1.ResourceCPU: *resourceInt(256),
		corev1.ResourceMemory: *resourceInt(1 << 40), corev1.ResourcePods: *resourceInt(1000),
	}
	// kwok writes the status too, so retry on conflict.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		nd, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		nd.Status.Capacity, nd.Status.Allocatable = res, res
		_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, nd, metav1.UpdateOptions{})
		return err
	})
}

func freePorts(n int) ([]int, error) {
	var out []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// writeKeys makes the service-account signing key pair the apiserver
// needs to issue tokens (the RBAC test runs the scheduler on one).
func writeKeys(dir string) error {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}

func resourceInt(n int) *resource.Quantity { return resource.NewQuantity(int64(n), resource.DecimalSI) }
