// Command image writes PAL's container image from the statically linked
// pal-kube and pal binaries, without a Docker daemon or a base image: one
// layer holding /pal-kube (the entrypoint: the scheduler), /pal (the
// simulator, which a sweep's pods run) and the passwd/group entries of the
// non-root user they run as, and a config that runs /pal-kube as that
// user. hack/image.sh builds the binaries and calls this; see
// docs/install.md.
//
// The output is an OCI image layout directory (-layout), which
// `skopeo copy oci:DIR docker://REGISTRY/pal:TAG`, `crane push`, `podman
// load` and containerd's `ctr import` read, and optionally a tarball
// (-tarball) in the `docker save` format that `docker load` and `kind load
// image-archive` read.
//
// Every timestamp in the image is -created (or SOURCE_DATE_EPOCH, or the
// Unix epoch), so the same binary and flags give the same image digest.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// User and group the image runs as: the conventional "nonroot" id of
// distroless images, which deploy/ and the chart also set.
const (
	uid      = 65532
	userName = "nonroot"
)

func main() {
	var (
		binary   = flag.String("binary", "", "the statically linked pal binary to put at /pal (required)")
		kubeBin  = flag.String("kube-binary", "", "the statically linked pal-kube binary to put at /pal-kube, the entrypoint (required)")
		dir      = flag.String("layout", "", "write an OCI image layout to this directory (replaced if it exists)")
		tarPath  = flag.String("tarball", "", "also write a docker-save tarball to this file")
		tag      = flag.String("tag", "pal:devel", "image reference recorded in the layout and tarball")
		version  = flag.String("version", "devel", "org.opencontainers.image.version label")
		revision = flag.String("revision", "", "org.opencontainers.image.revision label (VCS commit)")
		source   = flag.String("source", "https://github.com/palsched/pal", "org.opencontainers.image.source label")
		arch     = flag.String("arch", runtime.GOARCH, "architecture the binary was built for")
		created  = flag.String("created", "", "creation time, RFC 3339 (default SOURCE_DATE_EPOCH, else the Unix epoch)")
	)
	flag.Parse()
	if err := run(*binary, *kubeBin, *dir, *tarPath, *tag, *version, *revision, *source, *arch, *created); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(binary, kubeBinary, dir, tarPath, tag, version, revision, source, arch, createdFlag string) error {
	if binary == "" || kubeBinary == "" {
		return fmt.Errorf("-binary and -kube-binary are required")
	}
	if dir == "" && tarPath == "" {
		return fmt.Errorf("give -layout DIR, -tarball FILE or both")
	}
	created, err := creationTime(createdFlag)
	if err != nil {
		return err
	}
	bin, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	kube, err := os.ReadFile(kubeBinary)
	if err != nil {
		return err
	}
	layerTar, err := rootfs(bin, kube, created)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	labels := map[string]string{
		"org.opencontainers.image.title":       "pal",
		"org.opencontainers.image.description": "PAL: a GPU-cluster scheduler (Kubernetes scheduler, simulator and sweeps)",
		"org.opencontainers.image.source":      source,
		"org.opencontainers.image.version":     version,
		"org.opencontainers.image.created":     created.Format(time.RFC3339),
	}
	if revision != "" {
		labels["org.opencontainers.image.revision"] = revision
	}
	cfg := &v1.ConfigFile{
		Architecture: arch,
		OS:           "linux",
		Created:      v1.Time{Time: created},
		Config: v1.Config{
			User:       strconv.Itoa(uid) + ":" + strconv.Itoa(uid),
			Entrypoint: []string{"/pal-kube"},
			Cmd:        []string{"scheduler", "--config", "/etc/pal/config.yaml", "--log-json"},
			WorkingDir: "/",
			Env:        []string{"PATH=/"},
			Labels:     labels,
		},
	}
	// mutate.ConfigFile keeps the rootfs and history AppendLayers wrote.
	base, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg.RootFS = base.RootFS
	cfg.History = []v1.History{{Created: v1.Time{Time: created}, CreatedBy: "hack/image.sh", Comment: "pal " + version}}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return err
	}
	ref, err := name.ParseReference(tag)
	if err != nil {
		return fmt.Errorf("-tag %q: %v", tag, err)
	}
	if dir != "" {
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		p, err := layout.Write(dir, empty.Index)
		if err != nil {
			return err
		}
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
			"org.opencontainers.image.ref.name": ref.String(),
		})); err != nil {
			return err
		}
	}
	if tarPath != "" {
		if err := tarball.WriteToFile(tarPath, ref, img); err != nil {
			return err
		}
	}
	d, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s\n", ref, d)
	return nil
}

func creationTime(flagValue string) (time.Time, error) {
	if flagValue != "" {
		t, err := time.Parse(time.RFC3339, flagValue)
		if err != nil {
			return time.Time{}, fmt.Errorf("-created %q: want RFC 3339 (2026-12-01T00:00:00Z)", flagValue)
		}
		return t.UTC(), nil
	}
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: want seconds since the Unix epoch", s)
		}
		return time.Unix(n, 0).UTC(), nil
	}
	return time.Unix(0, 0).UTC(), nil
}

// rootfs is the image's only layer: /pal and /pal-kube owned by root (the
// user they run as cannot replace them), and /etc/passwd and /etc/group
// naming that user, for tools that look the id up. No shell, no libc: both
// are static.
func rootfs(bin, kube []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	id := strconv.Itoa(uid)
	files := []struct {
		name string
		mode int64
		body []byte
	}{
		{"etc/", 0o755, nil},
		{"etc/group", 0o644, []byte("root:x:0:\n" + userName + ":x:" + id + ":\n")},
		{"etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\n" +
			userName + ":x:" + id + ":" + id + ":" + userName + ":/home/" + userName + ":/sbin/nologin\n")},
		{"pal", 0o755, bin},
		{"pal-kube", 0o755, kube},
	}
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: mtime, Uname: "root", Gname: "root"}
		if f.body == nil {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(f.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
