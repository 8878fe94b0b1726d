// Builds PAL's container image without a Docker daemon (see hack/image.sh).
// A module of its own: go-containerregistry's requirements (the Docker
// client among them) would otherwise enter the scheduler's go.mod and
// go.sum, though no PAL command needs them.
module github.com/palsched/pal/hack/image

go 1.26.0

require github.com/google/go-containerregistry v0.22.1

require (
	github.com/klauspost/compress v1.19.2 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
	golang.org/x/sync v0.22.0 // indirect
)
