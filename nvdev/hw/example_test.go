package hw_test

import (
	"fmt"

	"github.com/rig-go/rig/internal/testkernels"
	"github.com/rig-go/rig/nvdev/hw"
)

// A device's compute channel waits for another device's word to reach 7,
// launches the descriptor at 0x10_0000_0000, and writes 8 into its own
// timeline word once the launch has completed.
func Example() {
	g, _ := hw.ForRM(0x900) // what the RM reports for an H200
	b := make([]uint32, 0, 64)
	b = hw.Acquire(b, g, 0x20_0000_0008, 7)
	b = hw.SendPcas(b, g, 0x10_0000_0000)
	b = hw.ComputeRelease(b, g, 0x20_0000_0000, 8)

	var ring []hw.Entry
	var base uint64
	ring, err := hw.AppendSegment(ring, g, &base, 0x30_0000_0000, uint32(len(b)), hw.Main, false)
	fmt.Println(g.Arch, len(b), "words,", len(ring), "entry", err)
	fmt.Printf("%#016x\n", uint64(ring[0]))
	// Output:
	// sm_90 15 words, 1 entry <nil>
	// 0x00003c3000000000
}

// Parse refuses an image that calls functions CUDA's driver supplies.
func ExampleParse() {
	b, _ := testkernels.Cubin("sm_90")
	_, err := hw.Parse(b)
	fmt.Println(err)

	c, _ := hw.Inspect(b)
	k, _ := c.Kernel("twice")
	fmt.Printf("%s: code at %#x, %d registers, %d parameter bytes at %#x\n", k.Name, k.Code, k.Registers, k.ParamBytes, k.ParamOffset)
	// Output:
	// cubin refers to symbols it does not define: __assertfail, vprintf (CUDA's driver supplies them; a device without libcuda runs no such image)
	// twice: code at 0x2f00, 8 registers, 8 parameter bytes at 0x210
}
