package nvdev

import (
	"strings"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// TestDMARegions: the driver hands its path the memory of a region it
// made, and refuses any other region without asking the path.
func TestDMARegions(t *testing.T) {
	r := openRaw(t, Config{})
	m := r.alloc(device.DeviceMemory, 4096)
	for _, c := range []struct {
		name   string
		region device.Region
		want   string
	}{
		{"its own region", m, "fake: no DMA"}, // the fake path's answer
		{"no region", nil, "did not make"},
		{"a nil memory", (*nvidia.Memory)(nil), "did not make"},
		{"another driver's region", struct{}{}, "did not make"},
	} {
		d, err := r.d.DMA(c.region, "0000:00:06.0")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %+v, %v; want an error with %q", c.name, d, err, c.want)
		}
	}
}
