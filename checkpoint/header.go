package checkpoint

import (
	"encoding/json"
	"os"
)

// Header is what a checkpoint's config.json holds, read by [ReadHeader]
// without the arrays: the manifest (names, shapes, dtypes and checksums of
// the parameter, optimiser-moment and extra arrays, and the optimiser
// step) and the model config.
type Header struct {
	Dir      string
	Manifest Manifest
	// Config is the raw JSON of the model config; DecodeConfig decodes it
	// strictly and checks it against its checksum.
	Config json.RawMessage

	configSum string // Config's recorded checksum ("" for a checkpoint without)
}

// ReadHeader reads and checks config.json of the checkpoint in dir, and
// nothing else: it decodes the file strictly, checks the manifest's format,
// version and dtype, and checks the config and the manifest against the
// checksums the file records. It is what a program needs to decide what
// to build (the model family, its config, the step a training run was
// saved at) before reading the arrays, which stay unread: a checkpoint
// whose arrays are missing or corrupt passes ReadHeader and fails [Read].
// Opening dir and retrying when a concurrent [Save] replaces it are as for
// Read.
func ReadHeader(dir string) (*Header, error) {
	return readRetrying(dir, func(root *os.Root, dir string) (*Header, error) {
		h, err := readHeader(root, dir)
		if err != nil {
			return nil, err
		}
		if err := h.checkManifestSum(dir); err != nil {
			return nil, err
		}
		out := &Header{Dir: dir, Manifest: h.man, Config: h.cj.Config}
		if h.verified {
			out.configSum = h.cj.SHA256.Config
		}
		return out, nil
	})
}

// DecodeConfig decodes the model config into v strictly and checks it
// against its checksum, as [Checkpoint.DecodeConfig] does.
func (h *Header) DecodeConfig(v any) error { return decodeConfig(h.Dir, h.Config, h.configSum, v) }

// Step returns the optimiser step the checkpoint was saved at, 0 when it
// holds no optimiser state.
func (h *Header) Step() int {
	if h.Manifest.Optim == nil {
		return 0
	}
	return h.Manifest.Optim.Step
}

// Header returns the config.json part of c, as [ReadHeader] would have
// read it.
func (c *Checkpoint) Header() *Header {
	return &Header{Dir: c.Dir, Manifest: c.Manifest, Config: c.Config, configSum: c.configSum}
}
