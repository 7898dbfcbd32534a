package nvidia

import (
	"fmt"

	"github.com/rig-go/rig/device"
)

// Reaches reports whether this GPU's work addresses the GPU memory of GPU
// index of this machine. Peer access is not built: only the GPU itself.
func (p *Path) Reaches(index int) bool { return index == p.index }

// MapPeer maps for this GPU memory of another GPU. Peer access is not
// built: it answers device.ErrNever.
func (p *Path) MapPeer(m *Memory) (*Memory, error) {
	return nil, fmt.Errorf("%w: peer access is not built on the nvidia path", device.ErrNever)
}

// SharesSpace reports whether other is a path of the same GPU in this
// process: the paths share the GPU's address space, so memory either gives
// lies at the same GPU address for the channels of both.
func (p *Path) SharesSpace(other any) bool {
	q, ok := other.(*Path)
	return ok && p.gpuState != nil && q.gpuState == p.gpuState
}
