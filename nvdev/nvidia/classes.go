package nvidia

import (
	"fmt"
	"slices"
)

// Generation is what differs between GPU generations for a device of this
// path: the classes of its channels, engines and doorbell page. Everything
// that depends on the generation reads it from here.
type Generation struct {
	// Name names the generation, such as "Hopper".
	Name string
	// Compute is the compute engine's class, such as HOPPER_COMPUTE_A.
	Compute uint32
	// Copy is the copy engine's class, such as HOPPER_DMA_COPY_A.
	Copy uint32
	// Channel is the GPFIFO channel's class, such as HOPPER_CHANNEL_GPFIFO_A.
	Channel uint32
	// Usermode is the class of the page that holds the doorbell, such as
	// HOPPER_USERMODE_A.
	Usermode uint32
}

// classHopperUsermode is HOPPER_USERMODE_A, whose parameters choose BAR0
// or BAR1.
const classHopperUsermode = 0xc661

// Classes of each generation (class/cl*.h; the RM's per-chip lists in
// g_gpu_class_list.c). A GPU's generation is the first whose compute class
// its class list holds.
var generations = []Generation{
	{Name: "Hopper", Compute: 0xcbc0, Copy: 0xc8b5, Channel: 0xc86f, Usermode: classHopperUsermode}, // GH100
	{Name: "Ada", Compute: 0xc9c0, Copy: 0xc7b5, Channel: 0xc56f, Usermode: 0xc561},                 // AD10x
	{Name: "Ampere GA10x", Compute: 0xc7c0, Copy: 0xc7b5, Channel: 0xc56f, Usermode: 0xc561},        // GA102..GA107
	{Name: "Ampere GA100", Compute: 0xc6c0, Copy: 0xc6b5, Channel: 0xc56f, Usermode: 0xc561},        // GA100
}

// Class names for messages: the classes this package allocates and those of
// every generation it knows.
var classNames = map[uint32]string{
	ClassRootClient:         "NV01_ROOT_CLIENT",
	ClassDevice:             "NV01_DEVICE_0",
	ClassSubdevice:          "NV20_SUBDEVICE_0",
	ClassMemorySystem:       "NV01_MEMORY_SYSTEM",
	ClassMemoryLocalUser:    "NV01_MEMORY_LOCAL_USER",
	ClassMemoryVirtual:      "NV01_MEMORY_VIRTUAL",
	ClassMemoryOSDescriptor: "NV01_MEMORY_SYSTEM_OS_DESCRIPTOR",
	ClassEventOSEvent:       "NV01_EVENT_OS_EVENT",
	ClassMemoryVirtual50:    "NV50_MEMORY_VIRTUAL",
	ClassContextShare:       "FERMI_CONTEXT_SHARE_A",
	ClassVASpace:            "FERMI_VASPACE_A",
	ClassChannelGroup:       "KEPLER_CHANNEL_GROUP_A",
	ClassDebugger:           "GT200_DEBUGGER",
	ClassConfidentialComp:   "NV_CONFIDENTIAL_COMPUTE",
	0xcbc0:                  "HOPPER_COMPUTE_A",
	0xc8b5:                  "HOPPER_DMA_COPY_A",
	0xc86f:                  "HOPPER_CHANNEL_GPFIFO_A",
	0xc661:                  "HOPPER_USERMODE_A",
	0xc9c0:                  "ADA_COMPUTE_A",
	0xc7c0:                  "AMPERE_COMPUTE_B",
	0xc7b5:                  "AMPERE_DMA_COPY_B",
	0xc6c0:                  "AMPERE_COMPUTE_A",
	0xc6b5:                  "AMPERE_DMA_COPY_A",
	0xc56f:                  "AMPERE_CHANNEL_GPFIFO_A",
	0xc561:                  "AMPERE_USERMODE_A",
}

// ClassName is the RM's name of class, or its number in hex.
func ClassName(class uint32) string {
	if n, ok := classNames[class]; ok {
		return n
	}
	return fmt.Sprintf("class 0x%x", class)
}

// GenerationOf picks the generation of a GPU whose RM lists classes, and
// checks that the list holds each of that generation's classes.
func GenerationOf(classes []uint32) (Generation, error) {
	for _, g := range generations {
		if !slices.Contains(classes, g.Compute) {
			continue
		}
		for _, c := range []uint32{g.Copy, g.Channel, g.Usermode} {
			if !slices.Contains(classes, c) {
				return Generation{}, fmt.Errorf("nvidia: the %s GPU lacks %s (0x%x)", g.Name, ClassName(c), c)
			}
		}
		return g, nil
	}
	return Generation{}, fmt.Errorf("nvidia: no known compute class among the GPU's %d classes (this path knows Ampere, Ada and Hopper)", len(classes))
}
