package nvdev

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/nvidia"
	"golang.org/x/sys/unix"
)

// countEvent counts the Waits of an event that the interrupt ended.
type countEvent struct {
	events
	waits, fired atomic.Int64
}

func (e *countEvent) Wait(timeout time.Duration) (bool, error) {
	e.waits.Add(1)
	ok, err := e.events.Wait(timeout)
	if ok {
		e.fired.Add(1)
	}
	return ok, err
}

// holdLateness submits a fill on queue q that waits on the GPU for the
// word w to reach i+1, which a goroutine writes 2 ms later, and returns
// how long after that write the host saw the value: by Sleep where sleep
// is set, by spinning on the word otherwise.
func holdLateness(t *testing.T, r *raw, w *uint64, m *nvidia.Memory, q, i int, sleep bool) time.Duration {
	t.Helper()
	atomic.StoreUint64(w, uint64(i))
	if sleep {
		parkWaiters(r)
	}
	v := r.submit([]device.Wait{{Word: w, Value: uint64(i) + 1}}, fillPart(q, m, 0, 8, byte(i)))
	var at atomic.Int64
	go func() {
		time.Sleep(2 * time.Millisecond)
		at.Store(time.Now().UnixNano())
		atomic.StoreUint64(w, uint64(i)+1)
	}()
	var t0 time.Time
	for !device.AtLeast(r.d.Signaled(), v) {
		if !sleep {
			stuck(r, &t0)
			continue
		}
		if err := r.d.Sleep(r.d.Signaled(), 2*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	end := time.Now().UnixNano()
	for at.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	return time.Duration(end - at.Load())
}

// TestGPUWake checks Sleep's wake-up through the GPU's non-stall
// interrupt, for each notifier the device may register and each channel
// that may end a value: a fill waits on the GPU for a word of rig's array,
// which the host writes 2 ms after Sleep blocked; Sleep must return
// through the event (not its 2 s bound). It logs the lateness of the
// host's sight of the value after its write (p50, p99, max) for a host
// that spins on the word (the GPU's acquire, fill and release alone), for
// Sleep on the event, and for Sleep without it (sleeps of pollFor).
func TestGPUWake(t *testing.T) {
	needGPU(t)
	for _, n := range []struct {
		name     string
		notifier uint32
	}{
		{"GR0", nvidia.NotifierGraphics},
		{"FIFO_EVENT_MTHD", nvidia.NotifierHost},
	} {
		t.Run(n.name, func(t *testing.T) {
			defer func(v uint32) { nonStallNotifier = v }(nonStallNotifier)
			nonStallNotifier = n.notifier
			r := openGPURaw(t, Config{})
			if r.d.wk.ev == nil {
				t.Fatalf("the device has no non-stall event: %v", r.d.wk.evErr)
			}
			ce := &countEvent{events: r.d.wk.ev}
			r.d.wk.ev = ce
			m := r.alloc(device.PinnedMemory, 4096)
			w := takeWord(t)
			const rounds = 40
			i := 0
			lateness := func(q int, sleep bool) []time.Duration {
				var lat []time.Duration
				for range rounds {
					lat = append(lat, holdLateness(t, r, w, m, q, i, sleep))
					i++
				}
				slices.Sort(lat)
				return lat
			}
			line := func(lat []time.Duration) string {
				return fmt.Sprintf("p50 %v, p99 %v, max %v", lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])
			}
			for _, q := range []int{qCompute, qCopy} {
				name := r.d.ch[q].name
				spun := lateness(q, false)
				fired0 := ce.fired.Load()
				lat := lateness(q, true)
				fired := ce.fired.Load() - fired0
				r.d.wk.ev = nil
				polled := lateness(q, true)
				r.d.wk.ev = ce
				t.Logf("%s channel ends the value: lateness after the host's write: spinning %s; Sleep on the event %s (%d of %d through the event); Sleep without it %s",
					name, line(spun), line(lat), fired, rounds, line(polled))
				if fired < rounds/2 {
					t.Errorf("%s channel: %d of %d wake-ups came through the event", name, fired, rounds)
				}
				if lat[len(lat)-1] > time.Second {
					t.Errorf("%s channel: a wake-up took %v: Sleep ran to its bound", name, lat[len(lat)-1])
				}
			}
		})
	}
}

// BenchmarkGPURoundTripInterrupt is BenchmarkGPURoundTrip with every value
// raising the non-stall interrupt, as while waiters are parked: the
// interrupt's cost on the round trip of one goroutine.
func BenchmarkGPURoundTripInterrupt(b *testing.B) {
	r := benchRaw(b, Config{})
	if r.d.wk.ev == nil {
		b.Fatalf("the device has no non-stall event: %v", r.d.wk.evErr)
	}
	r.d.wk.parked.Store(true)
	r.d.budget = nil // every value, beyond the GPU's budget
	rawRoundTrips(b, r)
}

// TestGPUWakeHost logs the machine's own wake-up lateness, with no GPU: a
// goroutine blocked in ppoll on a pipe that another writes 2 ms later, as
// Sleep blocks on the event, and a goroutine in time.Sleep of 2 ms. It
// tells how much of the event's lateness (TestGPUWake) is the host's.
func TestGPUWakeHost(t *testing.T) {
	needGPU(t)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	const rounds = 40
	var polled, slept []time.Duration
	buf := make([]byte, 1)
	for range rounds {
		var at atomic.Int64
		go func() {
			time.Sleep(2 * time.Millisecond)
			at.Store(time.Now().UnixNano())
			_, _ = unix.Write(p[1], buf)
		}()
		fds := []unix.PollFd{{Fd: int32(p[0]), Events: unix.POLLIN}}
		ts := unix.NsecToTimespec(int64(time.Second))
		// The runtime's signals (preemption) interrupt the poll now and
		// then: poll again.
		for {
			_, err := unix.Ppoll(fds, &ts, nil)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		end := time.Now().UnixNano()
		_, _ = unix.Read(p[0], buf)
		polled = append(polled, time.Duration(end-at.Load()))
		t0 := time.Now()
		time.Sleep(2 * time.Millisecond)
		slept = append(slept, time.Since(t0)-2*time.Millisecond)
	}
	slices.Sort(polled)
	slices.Sort(slept)
	t.Logf("ppoll on a pipe, lateness after the write: p50 %v, p99 %v, max %v; time.Sleep(2ms) overshoot: p50 %v, p99 %v, max %v",
		polled[rounds/2], polled[rounds*99/100], polled[rounds-1], slept[rounds/2], slept[rounds*99/100], slept[rounds-1])
}
