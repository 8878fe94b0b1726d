// Package deploy holds the tests of what installs PAL: the container image
// hack/image.sh writes, the Helm chart and the Grafana dashboard.
package deploy

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// ociDescriptor, ociIndex, ociManifest and ociConfig are the parts of the
// OCI image spec the test reads. They are written here from the spec, not
// taken from the library that wrote the image, so that the test checks the
// writer rather than agreeing with it.
type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
}

type ociIndex struct {
	SchemaVersion int             `json:"schemaVersion"`
	Manifests     []ociDescriptor `json:"manifests"`
}

type ociManifest struct {
	SchemaVersion int             `json:"schemaVersion"`
	MediaType     string          `json:"mediaType"`
	Config        ociDescriptor   `json:"config"`
	Layers        []ociDescriptor `json:"layers"`
}

type ociConfig struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Created      string `json:"created"`
	Config       struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Cmd        []string          `json:"Cmd"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// blob reads a blob of an OCI layout and checks it against its digest and
// size, as a registry or runtime would.
func blob(t *testing.T, dir string, d ociDescriptor) []byte {
	t.Helper()
	algo, hexd, ok := strings.Cut(d.Digest, ":")
	if !ok || algo != "sha256" {
		t.Fatalf("digest %q: want sha256:<hex>", d.Digest)
	}
	b, err := os.ReadFile(filepath.Join(dir, "blobs", "sha256", hexd))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if hex.EncodeToString(sum[:]) != hexd {
		t.Fatalf("blob %s: content hashes to %x", d.Digest, sum)
	}
	if int64(len(b)) != d.Size {
		t.Fatalf("blob %s: %d bytes, descriptor says %d", d.Digest, len(b), d.Size)
	}
	return b
}

// The image hack/image.sh writes is a valid OCI layout whose config runs
// /pal-kube as a non-root user with no shell in the image, and whose
// layer's pal-kube and pal are static binaries that run.
func TestImage(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatalf("bash is needed to run hack/image.sh: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "oci")
	const version = "v0.0.0-imagetest"
	cmd := exec.Command("bash", filepath.Join("..", "hack", "image.sh"), "--out", dir, "--version", version)
	// 1700000000 s after the epoch is 2023-11-14T22:13:20Z.
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH=1700000000")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/image.sh: %v\n%s", err, out)
	}

	var lay struct {
		Version string `json:"imageLayoutVersion"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "oci-layout")); err != nil || json.Unmarshal(b, &lay) != nil || lay.Version != "1.0.0" {
		t.Fatalf("oci-layout: %q, %v; want imageLayoutVersion 1.0.0", b, err)
	}
	var idx ociIndex
	raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &idx); err != nil {
		t.Fatalf("index.json: %v", err)
	}
	if idx.SchemaVersion != 2 || len(idx.Manifests) != 1 {
		t.Fatalf("index.json: schema %d, %d manifests; want 2, 1", idx.SchemaVersion, len(idx.Manifests))
	}
	if got := idx.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; got != "pal:"+version {
		t.Errorf("ref.name %q, want pal:%s", got, version)
	}
	var man ociManifest
	if err := json.Unmarshal(blob(t, dir, idx.Manifests[0]), &man); err != nil {
		t.Fatal(err)
	}
	if man.MediaType != "application/vnd.oci.image.manifest.v1+json" || man.Config.MediaType != "application/vnd.oci.image.config.v1+json" ||
		len(man.Layers) != 1 || man.Layers[0].MediaType != "application/vnd.oci.image.layer.v1.tar+gzip" {
		t.Fatalf("manifest: %+v", man)
	}

	var cfg ociConfig
	if err := json.Unmarshal(blob(t, dir, man.Config), &cfg); err != nil {
		t.Fatal(err)
	}
	c := cfg.Config
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s, want linux/%s", cfg.OS, cfg.Architecture, runtime.GOARCH)
	}
	// Kubernetes' runAsNonRoot can only verify a numeric, non-zero user.
	if c.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", c.User)
	}
	if !slices.Equal(c.Entrypoint, []string{"/pal-kube"}) {
		t.Errorf("entrypoint %q, want [/pal-kube] (exec form: no shell)", c.Entrypoint)
	}
	if !slices.Equal(c.Cmd, []string{"scheduler", "--config", "/etc/pal/config.yaml", "--log-json"}) {
		t.Errorf("cmd %q", c.Cmd)
	}
	if cfg.Created != "2023-11-14T22:13:20Z" || c.Labels["org.opencontainers.image.created"] != cfg.Created {
		t.Errorf("created %q, label %q; want SOURCE_DATE_EPOCH's 2023-11-14T22:13:20Z", cfg.Created, c.Labels["org.opencontainers.image.created"])
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.title":   "pal",
		"org.opencontainers.image.version": version,
		"org.opencontainers.image.source":  "https://github.com/palsched/pal",
	} {
		if c.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], want)
		}
	}
	rev := ""
	if out, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
		rev = strings.TrimSpace(string(out))
	}
	if c.Labels["org.opencontainers.image.revision"] != rev {
		t.Errorf("revision label %q, want the checkout's %q", c.Labels["org.opencontainers.image.revision"], rev)
	}

	// The layer: exactly these entries (so no shell, no libc), and its
	// uncompressed digest is the config's diff_id.
	gz := blob(t, dir, man.Layers[0])
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	layerTar, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(layerTar); len(cfg.RootFS.DiffIDs) != 1 || cfg.RootFS.DiffIDs[0] != fmt.Sprintf("sha256:%x", sum) {
		t.Errorf("diff_ids %q, layer hashes to sha256:%x", cfg.RootFS.DiffIDs, sum)
	}
	files := map[string][]byte{}
	var names []string
	tr := tar.NewReader(bytes.NewReader(layerTar))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if (h.Name == "pal" || h.Name == "pal-kube") && (h.Mode&0o777 != 0o755 || h.Uid != 0) {
			t.Errorf("/%s: mode %o uid %d; want 755 owned by root, so the user it runs as cannot replace it", h.Name, h.Mode, h.Uid)
		}
		files[h.Name], _ = io.ReadAll(tr)
	}
	if want := []string{"etc/", "etc/group", "etc/passwd", "pal", "pal-kube"}; !slices.Equal(names, want) {
		t.Errorf("layer holds %q, want exactly %q", names, want)
	}
	if !bytes.Contains(files["etc/passwd"], []byte("\nnonroot:x:65532:65532:")) {
		t.Errorf("etc/passwd has no nonroot 65532 entry:\n%s", files["etc/passwd"])
	}

	// The extracted binaries are static (no interpreter, no shared
	// libraries) and run: pal the simulator, pal-kube the scheduler.
	for _, tc := range []struct{ name, cmd, usage string }{{"pal", "sim", "Usage:\n  pal sim"}, {"pal-kube", "scheduler", "Usage:\n  pal-kube scheduler"}} {
		checkBinary(t, files[tc.name], tc.name, version, rev, cfg.Architecture, tc.cmd, tc.usage)
	}
	checkDockerfile(t, c.User, c.Entrypoint, c.Cmd)
}

// checkDockerfile keeps deploy/Dockerfile, the build for people with a
// Docker daemon, running the binary the way the canonical image does.
func checkDockerfile(t *testing.T, user string, entrypoint, cmd []string) {
	t.Helper()
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, " "); ok && (k == "USER" || k == "ENTRYPOINT" || k == "CMD") {
			got[k] = strings.TrimSpace(v)
		}
	}
	ep, _ := json.Marshal(entrypoint)
	cm, _ := json.Marshal(cmd)
	for k, want := range map[string]string{"USER": user, "ENTRYPOINT": string(ep), "CMD": string(cm)} {
		if strings.ReplaceAll(got[k], `", "`, `","`) != want {
			t.Errorf("deploy/Dockerfile %s %s, the image has %s", k, got[k], want)
		}
	}
}

// checkBinary checks one of the image's binaries: static, and (on this
// machine's architecture) its --version and a command's help run.
func checkBinary(t *testing.T, body []byte, name, version, rev, arch, cmd, usage string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(bin, body, 0o755); err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatalf("/%s is not an ELF binary: %v", name, err)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("/%s has a program interpreter: it is dynamically linked", name)
		}
	}
	if libs, _ := ef.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("/%s needs shared libraries %q", name, libs)
	}
	ef.Close()
	if arch != runtime.GOARCH {
		return // cannot run another architecture's binary
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", name, err, out)
	}
	// The go command records the commit in a plain clone (.git a
	// directory); in a `git worktree` checkout or a source tarball it
	// records none, and pal says so.
	wantVersion := name + " " + regexp.QuoteMeta(version)
	if fi, err := os.Stat(filepath.Join("..", ".git")); err == nil && fi.IsDir() && rev != "" {
		wantVersion += ` \(commit ` + rev[:12] + `[^)]*\)`
	} else {
		wantVersion += ` \(no commit recorded[^)]*\)`
	}
	wantVersion += ", "
	if !regexp.MustCompile("^" + wantVersion + `go1\.`).Match(out) {
		t.Errorf("%s --version printed %q, want it to match %q", name, out, wantVersion)
	}
	out, err = exec.Command(bin, cmd, "--help").CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte(usage)) {
		t.Errorf("%s %s --help: %v\n%s", name, cmd, err, out)
	}
}
