package hw

import (
	"fmt"

	"github.com/rig-go/rig/device"
)

// Gpu is the GPU as compiled code sees it:
// the capability record an RM device declares in its facts under Key. It
// holds the classes and counts the path read of the GPU, the windows the
// device set on its compute channel, and Local, which grows the local
// memory the compute channel gives kernels.
type Gpu struct {
	// Gen is the GPU's generation.
	Gen *Generation
	// The classes of the device's channels and engines.
	ChannelClass, ComputeClass, CopyClass uint32
	// SMVersion is the multiprocessors' version as the RM reports it
	// (NV2080_CTRL_GR_INFO_INDEX_SM_VERSION), such as 0x900.
	SMVersion uint32
	// GPCs is the graphics processing clusters, TPCsPerGPC the texture
	// processing clusters of one, SMsPerTPC the multiprocessors of one of
	// those, and WarpsPerSM the most warps a multiprocessor runs at once.
	GPCs, TPCsPerGPC, SMsPerTPC, WarpsPerSM int
	// Windows is where kernels see their shared and local memory.
	Windows Windows
	// Local grows the compute channel's local memory so that every thread
	// has perThread bytes, from the device's next submission on the
	// compute channel; it returns an error once the device has stopped,
	// where perThread is more than a launch's descriptor gives a thread
	// (Qmd.LocalHighSize), or where the GPU lacks the memory. A perThread
	// of 0 or less changes nothing.
	Local func(perThread int) error
}

// Key is the key under which an RM device declares its Gpu:
// rig.Capability(dev, hw.Key) returns it.
var Key = device.NewKey[*Gpu]("nvdev")

// Declare declares in an RM device's facts the record its Capability
// returns.
func Declare(f *device.Facts) { f.Capability = Key }

// WindowsBase is the first of the GPU addresses at which a device's kernels
// see their shared and local memory, 2^40 - 8 GiB:
// the shared window, 4 GiB from a 4 GiB-aligned base as Hopper needs, then
// the local window, which ends at 2^40. A path gives no memory there.
const WindowsBase = 1<<40 - 8<<30

// DefaultWindows places the windows from WindowsBase.
var DefaultWindows = Windows{Shared: WindowsBase, Local: WindowsBase + 4<<30}

// NewGpu is the record of a GPU whose RM reports the multiprocessors'
// version sm (such as 0x900) and those counts, with the classes and
// windows of its generation; Local is left to the device.
func NewGpu(sm uint32, gpcs, tpcsPerGPC, smsPerTPC, warpsPerSM int) (*Gpu, error) {
	g, err := ForRM(sm)
	if err != nil {
		return nil, err
	}
	if gpcs <= 0 || tpcsPerGPC <= 0 || smsPerTPC <= 0 || warpsPerSM <= 0 {
		return nil, fmt.Errorf("GPU of %d GPCs, %d TPCs each, %d SMs a TPC, %d warps an SM", gpcs, tpcsPerGPC, smsPerTPC, warpsPerSM)
	}
	return &Gpu{
		Gen: g, ChannelClass: g.ChannelClass, ComputeClass: g.ComputeClass, CopyClass: g.CopyClass,
		SMVersion: sm, GPCs: gpcs, TPCsPerGPC: tpcsPerGPC, SMsPerTPC: smsPerTPC, WarpsPerSM: warpsPerSM,
		Windows: DefaultWindows,
	}, nil
}

// SMs is the multiprocessors the counts hold: GPCs × TPCsPerGPC ×
// SMsPerTPC, an upper bound where the RM reports the litter's counts.
func (g *Gpu) SMs() int { return g.GPCs * g.TPCsPerGPC * g.SMsPerTPC }

// LocalBytes sizes the compute channel's local memory for perThread bytes
// a thread: rounded up to 32 bytes a thread, to 512 bytes a warp, to 32 KiB
// a TPC for every warp its multiprocessors run, and the whole to 128 KiB
// (as tinygrad sizes it). perTPC is SET_SHADER_LOCAL_MEMORY_NON_THROTTLED's
// size (LocalMemory), total the memory to allocate.
func (g *Gpu) LocalBytes(perThread int) (perTPC, total uint64) {
	slm := (uint64(max(perThread, 0)) + 31) &^ 31
	perWarp := (slm*32 + 0x1ff) &^ 0x1ff
	perTPC = (perWarp*uint64(g.WarpsPerSM)*uint64(g.SMsPerTPC) + 0x7fff) &^ 0x7fff
	total = (perTPC*uint64(g.TPCsPerGPC)*uint64(g.GPCs) + 0x1ffff) &^ 0x1ffff
	return perTPC, total
}

// MakeLaunch makes the template of kernel k's launches on this GPU, where
// k's image lies at image (MakeLaunch).
func (g *Gpu) MakeLaunch(k *Kernel, image uint64) (*Launch, error) {
	return MakeLaunch(g.Gen, k, image, g.Windows)
}
