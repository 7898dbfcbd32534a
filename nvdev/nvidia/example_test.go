package nvidia_test

import (
	"fmt"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// Open GPU 0, read what the path learned of it, and allocate Mapped memory
// that the host and the GPU address alike.
func ExampleOpen() {
	p, err := nvidia.Open(0, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	g := p.GPU()
	fmt.Printf("%s %s, %d SMs\n", g.Name, g.Arch(), g.GPCs*g.TPCsPerGPC*g.SMsPerTPC)
	m, err := p.Alloc(device.MappedMemory, 1<<20)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Free(m)
	copy(m.Bytes(), "hello")
	fmt.Printf("GPU address 0x%x, host address 0x%x\n", m.Address, m.Host)
}
