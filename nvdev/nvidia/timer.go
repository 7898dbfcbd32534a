package nvidia

import (
	"errors"
	"sync/atomic"

	"github.com/rig-go/rig/device"
)

// Timer is one reading of the GPU's timer (PTIMER, nanoseconds) against the
// host's clock: the GPU's timer read GPU when the host's clock (device.Now)
// read Host, within Width/2 either side.
type Timer struct {
	GPU   uint64
	Host  int64
	Width int64
}

// ReadTimer reads the GPU's timer through the usermode page's TIME_1 and
// TIME_0 registers, between two reads of the host's clock: the path's clock,
// which a device measures at open and again as it
// settles stamps. It returns an error after Stop, which unmaps the page:
// a ReadTimer must end before Stop begins, as Stop does not wait for it.
func (p *Client) ReadTimer() (Timer, error) {
	if p.usermodeMap == 0 {
		return Timer{}, errStopped
	}
	lo := (*uint32)(ptrAt(p.usermodeMap + usermodeTime0))
	hi := (*uint32)(ptrAt(p.usermodeMap + usermodeTime1))
	for range 8 {
		before := device.Now()
		h := atomic.LoadUint32(hi)
		l := atomic.LoadUint32(lo)
		h2 := atomic.LoadUint32(hi)
		after := device.Now()
		if h != h2 {
			continue // the low word wrapped between the reads
		}
		if h == ^uint32(0) && l == ^uint32(0) {
			return Timer{}, &device.Fault{Why: "nvidia: the GPU's timer reads all ones: the GPU is off the bus"}
		}
		if h == 0 && l == 0 {
			// The BAR1 alias of the usermode page has no timer.
			return Timer{}, errors.New("nvidia: the usermode page's timer reads 0")
		}
		return Timer{GPU: uint64(h)<<32 | uint64(l), Host: before + (after-before)/2, Width: after - before}, nil
	}
	return Timer{}, errors.New("nvidia: the GPU's timer would not hold still")
}

// ReadTimerRM reads the GPU's timer through the RM, which reads the timer's
// registers between reads of the kernel's raw monotonic clock
// (NV2080_CTRL_CMD_TIMER_GET_GPU_CPU_TIME_CORRELATION_INFO, PLATFORM_API),
// and maps the kernel's clock to the host's with a pair of readings of its
// own. It is ReadTimer's witness: slower, but it needs no usermode page.
func (p *Client) ReadTimerRM() (Timer, error) {
	// The offset of the host's clock from the raw clock, from the
	// narrowest of a few pairs.
	var off, width int64 = 0, -1
	for range 4 {
		a := device.Now()
		raw, err := rawClock()
		if err != nil {
			return Timer{}, err
		}
		b := device.Now()
		if width < 0 || b-a < width {
			width = b - a
			off = a + (b-a)/2 - raw
		}
	}
	c := TimerCorrelationParams{CPUClkID: TimerClockPlatformAPI, SampleCount: 1}
	if err := controlOf(p.r, p.subdevice, CtrlTimerGetGPUCPUTimeCorr, &c); err != nil {
		return Timer{}, asFault(err)
	}
	s := c.Samples[0]
	return Timer{GPU: s.GPUTime, Host: int64(s.CPUTime) + off, Width: width}, nil
}
