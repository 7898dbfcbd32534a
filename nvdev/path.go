package nvdev

import (
	"fmt"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/hw"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// path is what a device needs of a path to a GPU's RM, as a method set.
// *nvidia.Client, the path through NVIDIA's kernel driver, has it; a path
// through the GPU's own system processor would offer the same methods over
// the same data types. The
// tests give a fake one.
type path interface {
	Index() int
	Key() any
	Device() nvidia.Handle
	Subdevice() nvidia.Handle
	VASpace() nvidia.Handle
	GPU() nvidia.GPU
	Budget() int64
	CacheBytes() int64
	Bus() string
	HangMs() int

	Alloc(k device.Memory, n int) (*nvidia.Memory, error)
	MapsHost() bool
	MapHost(a uintptr, n int) (*nvidia.Memory, error)
	MapPeer(m *nvidia.Memory) (*nvidia.Memory, error)
	Reaches(index int) bool
	Free(m *nvidia.Memory) error
	DMA(m *nvidia.Memory, fn string) (device.DMA, error)

	Flush() *uint32
	Ring(token uint32)
	Register(channel nvidia.Handle) error
	Unregister(channel nvidia.Handle) error
	Check() error
	ReadTimer() (nvidia.Timer, error)
	Stop() error
	Close() error
}

// rmAPI is the GPU's RM as a path reaches it:
// *nvidia.RM has it.
type rmAPI interface {
	Client() nvidia.Handle
	Alloc(parent nvidia.Handle, class uint32, params []byte) (nvidia.Handle, error)
	Free(parent, object nvidia.Handle) error
	Token(channel nvidia.Handle) (uint32, error)
	Schedule(group nvidia.Handle, p *nvidia.ScheduleParams) error
	Boost(subdevice nvidia.Handle) error
	SMErrors(debugger nvidia.Handle, p *nvidia.SMErrorStatesParams) error
	MMUFaults(debugger nvidia.Handle, p *nvidia.MMUFaultInfoParams) error
}

// Config tunes a device. The zero value is the default device.
type Config struct {
	// Timeline is which timeline of the GPU the opener opens (Timeline):
	// 0, the first, is GPU(i)'s. Negative panics.
	Timeline int
	// SharedGroup puts the device's channels in the channel group the
	// GPU's timelines share in the process, each in a subcontext of its
	// own, whose work the compute engine runs side by side. By
	// default a device's channels are in a channel group of their own,
	// which the GPU's scheduler time-slices against the other groups.
	// Sharing is opt-in: on the H200 (RM 580) a device that closed in the
	// shared group preempted its siblings' channels, and a regrowth's new
	// channels waited behind held work of the group (docs/nvdev.md).
	SharedGroup bool
	// Hang bounds progress: rig loses the device once its word has not
	// moved for Hang while work is pending. 0 is the default, none, which
	// leaves the GPU's work to the RM's watchdog, and negative is none
	// too. The path's hang_ms (Facts.HangMs) is the bound in whole
	// milliseconds (device.HangMsOf), 1 for a positive bound below a
	// millisecond; the opener refuses a bound whose milliseconds do not
	// fit an int (past about 24.8 days, where an int has 32 bits), naming
	// it, before it opens the GPU.
	Hang time.Duration
	// RingEntries is the entries of each channel's ring, a power of two;
	// 0 is 262,144.
	RingEntries int
	// SegmentBytes is the bytes of each channel's segment ring, and
	// LaunchBytes those of the launch ring; 0 is 1 MiB each.
	SegmentBytes, LaunchBytes int
	// NoComputeCopies leaves the copy engine off the compute channel, so
	// that the device refuses a copy of bytes on COMPUTE:0. By default
	// the compute channel binds one on subchannel 4 and runs copies and
	// fills in its queue's order.
	NoComputeCopies bool
	// PinnedSegments keeps the channels' segment rings in Pinned memory;
	// by default they are Mapped memory where the BAR has room, which the
	// channels fetch from faster (docs/nvdev.md).
	PinnedSegments bool
	// PinnedRings keeps every ring the host writes (the channels' rings
	// and USERD, the segment and launch rings) and the driver's own kernels
	// in Pinned memory, so that a submission writes nothing through the
	// BAR and wakes the channels without the read of the path's flush word
	// (1.3 µs on the H200); the compute engine then fetches each launch
	// from host memory, which costs the GPU about 2 µs a launch
	// (docs/nvdev.md).
	PinnedRings bool
	// NoLinkLaunches sends each launch of a value with a wait for idle
	// before it. By default a launch that follows a launch of the same
	// value on the compute channel, with nothing between, is linked to it:
	// the descriptor before schedules it as it completes (DEPENDENT_QMD0,
	// SCHEDULE), in place of a wait for idle and a send of its own.
	NoLinkLaunches bool
	// NoOwnRelease makes every value end with a semaphore release of its
	// channel, where by default an untimed value of launches on COMPUTE:0
	// whose last part is a launch has that launch release it (the
	// descriptor's release slot), with no wait for idle after it.
	NoOwnRelease bool
	// CopyKernels chooses where a copy or a fill of one row of at least
	// 256 KiB within the device's Device memory runs: 0 as the driver's
	// kernel on the compute channel on sm_80, sm_86 and sm_89, and on
	// sm_90, where it ran 20 times as fast as the copy
	// engine (docs/nvdev.md); > 0 as the kernel wherever a cubin of kernels/
	// runs; < 0 on the copy engine.
	CopyKernels int
	// OneRunqueue allocates both channels on the channel group's first
	// runqueue, so that one PBDMA serves both, as before. By default the
	// copy channel runs on the group's second runqueue where the RM gives
	// it one (and, for an odd timeline of the shared group, the compute
	// channel there and the copy channel on the first), so that each
	// channel's acquires are polled by a PBDMA of its own: a PBDMA whose
	// channels made no progress stays on one channel's acquire until its
	// timeslice ends (docs/nvdev.md, Channels and rings).
	// For measuring: on two H200s, two devices of two GPUs that wait on
	// each other stopped for good with it (docs/nvdev.md).
	OneRunqueue bool

	// Tests' knobs: tweak changes each launch's descriptor after the
	// driver stamped and linked it, as it goes into the launch ring, and
	// pcas, where not 0, is the SEND_SIGNALING_PCAS2_B action of each
	// launch.
	tweak func(q hw.Qmd)
	pcas  uint32
	// pin puts the rings of its bits in Pinned memory one by one, for
	// weighing where each costs the GPU (the flush word is still read
	// while any ring the host writes lies in the BAR).
	pin uint8
	// noDepPrefetch leaves DEPENDENT_QMD_PREFETCH off in the descriptor
	// before a linked launch.
	noDepPrefetch bool
	// noFlush wakes the channels without reading the flush word first,
	// for weighing what the read costs; the GPU may then run words the
	// host's writes have not yet reached.
	noFlush bool
	// submitKicks has Submit store GPPut, read the flush word and ring
	// the doorbell itself, under mu, as the device did before Kick, for
	// weighing the two (kick.go).
	submitKicks bool
}

// Bits of Config.pin.
const (
	pinRing   = 1 << iota // the channels' rings and USERD
	pinLaunch             // the launch ring
)

// Defaults of Config.
const (
	defaultRingEntries  = 1 << 18
	defaultSegmentBytes = 1 << 20
	defaultLaunchBytes  = 1 << 20
)

// GPU is the opener of NVIDIA GPU i, counted in PCI bus order among the
// machine's NVIDIA GPUs, through NVIDIA's kernel driver, with no CUDA: its
// first timeline. It is named "NV" for 0 and "NV:i" otherwise. It panics
// if i < 0.
func GPU(i int) device.Opener { return Open(i, Config{}) }

// Timeline is the opener of the kth timeline of GPU i, a device of its
// own beside the GPU's other timelines: its own word and channels, in a
// channel group of its own (Open with Config.SharedGroup puts them in a
// subcontext of the channel group the GPU's timelines share),
// with the GPU's memory at the same addresses as theirs. Timeline(i, 0) is
// GPU(i). The kth for k > 0 is named as GPU(i) with "/k" after it: "NV/1",
// "NV:2/3". It panics if i < 0 or k < 0.
func Timeline(i, k int) device.Opener { return Open(i, Config{Timeline: k}) }

// Name is the name of the opener of GPU i's timeline k: "NV" or "NV:i"
// for the first, with "/k" after it for k > 0.
func Name(i, k int) string {
	name := "NV"
	if i > 0 {
		name = fmt.Sprintf("NV:%d", i)
	}
	if k > 0 {
		name = fmt.Sprintf("%s/%d", name, k)
	}
	return name
}

// Open is GPU's opener with a configuration: the timeline c.Timeline of
// GPU i. It panics if i < 0 or c.Timeline < 0.
func Open(i int, c Config) device.Opener {
	if i < 0 {
		panic(fmt.Sprintf("nvdev: GPU(%d): a GPU's number is not negative", i))
	}
	if c.Timeline < 0 {
		panic(fmt.Sprintf("nvdev: Timeline(%d, %d): a timeline's number is not negative", i, c.Timeline))
	}
	name := Name(i, c.Timeline)
	return device.Opener{Name: name, Make: func(word *uint64) (device.Driver, error) {
		return openPath(word, c, func(o *nvidia.Options) (path, rmAPI, error) {
			p, err := nvidia.Open(i, o)
			if err != nil {
				return nil, nil, fmt.Errorf("nvdev: open GPU %d: %w", i, err)
			}
			return p, p.RM(), nil
		})
	}}
}

// openPath makes the device, whose timeline word is the 8 bytes at word,
// on the path that dial opens with the options c asks for (nvidia.Open's,
// or the tests' fake); it closes that path where the make fails. It
// returns an error naming c's hang bound where HangMsOf refuses it, before
// it dials.
func openPath(word *uint64, c Config, dial func(o *nvidia.Options) (path, rmAPI, error)) (device.Driver, error) {
	hangMs, err := device.HangMsOf(c.Hang)
	if err != nil {
		return nil, fmt.Errorf("nvdev: %w", err)
	}
	p, rm, err := dial(&nvidia.Options{HangMs: hangMs})
	if err != nil {
		return nil, err
	}
	d, err := makeDevice(word, p, rm, c)
	if err != nil {
		closeMade(p, err)
		return nil, err
	}
	return d, nil
}
