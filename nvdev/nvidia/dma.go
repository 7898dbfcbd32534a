package nvidia

import (
	"fmt"

	"github.com/rig-go/rig/device"
)

// DMA is how the PCI function at fn reaches m. It is not built: it answers
// an error naming the cause.
func (p *Path) DMA(m *Memory, fn string) (device.DMA, error) {
	if _, err := ParsePCIAddress(fn); err != nil {
		return device.DMA{}, err
	}
	return device.DMA{}, fmt.Errorf("nvidia: DMA by %s is not built on the nvidia path", fn)
}
