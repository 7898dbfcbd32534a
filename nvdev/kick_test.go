package nvdev

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	rig "github.com/rig-go/rig/runtime"
)

// submitOnly submits parts as the next value, with no Kick.
func (r *raw) submitOnly(parts ...device.Part) uint64 {
	r.t.Helper()
	s := device.Submission{Value: r.v + 1, Parts: parts}
	for a := r.d.Room(&s); a.Kind != device.RoomOK; a = r.d.Room(&s) {
		if a.Kind != device.RoomGrow {
			r.t.Fatalf("room of value %d: %+v", s.Value, a)
		}
		if err := r.d.Grow(); err != nil {
			r.t.Fatal(err)
		}
	}
	r.v++
	if a := r.d.Submit(&s); a.Kind != device.Committed {
		r.t.Fatalf("submit: %+v", a)
	}
	return r.v
}

func (f *fake) ringCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rings
}

// TestKickRings: Submit only stores, and neither GPPut nor the doorbell
// moves until Kick, which makes the channel see every value submitted
// before it with one doorbell; a Kick with nothing new rings nothing.
// With submitKicks, Submit rings itself, as the device did before Kick.
func TestKickRings(t *testing.T) {
	for _, own := range []bool{false, true} {
		t.Run(fmt.Sprintf("submitKicks=%v", own), func(t *testing.T) {
			r := openRaw(t, Config{submitKicks: own})
			e := r.entry("empty")
			r.wait(r.submit(nil, launch(e, 1, 32, nil)))
			rings := r.f.ringCount()
			put := atomic.LoadUint32(r.d.ch[qCompute].gpPut)
			w := r.d.Signaled()
			const n = 5
			for range n {
				r.submitOnly(launch(e, 1, 32, nil))
			}
			r.f.pump()
			if own {
				if got := r.f.ringCount() - rings; got != n {
					t.Errorf("%d doorbells for %d submissions that kick themselves", got, n)
				}
				r.wait(r.v)
				r.d.Kick(r.v)
				if got := r.f.ringCount() - rings; got != n {
					t.Errorf("a Kick after submissions that kicked rang %d doorbells", got-n)
				}
				return
			}
			if got := r.f.ringCount(); got != rings {
				t.Errorf("%d doorbells before Kick", got-rings)
			}
			if got := atomic.LoadUint32(r.d.ch[qCompute].gpPut); got != put {
				t.Errorf("GPPut moved from %d to %d before Kick", put, got)
			}
			if got := r.d.Signaled(); got != w {
				t.Errorf("the word moved from %d to %d before Kick", w, got)
			}
			r.d.Kick(r.v)
			if got := r.f.ringCount() - rings; got != 1 {
				t.Errorf("one Kick for %d values rang %d doorbells, want 1", n, got)
			}
			r.wait(r.v)
			r.d.Kick(r.v)
			if got := r.f.ringCount() - rings; got != 1 {
				t.Errorf("a Kick with nothing new rang %d doorbells", got-1)
			}
		})
	}
}

// TestKickAfterStop: a Kick after Stop rings nothing and touches nothing
// Stop freed.
func TestKickAfterStop(t *testing.T) {
	r := openRaw(t, Config{})
	e := r.entry("empty")
	r.submitOnly(launch(e, 1, 32, nil))
	rings := r.f.ringCount()
	if err := r.d.Stop(""); err != nil {
		t.Fatal(err)
	}
	r.d.Kick(r.v)
	if got := r.f.ringCount(); got != rings {
		t.Errorf("a Kick after Stop rang %d doorbells", got-rings)
	}
}

// TestKickUploadBetween: an image's upload, which stores GPPut itself,
// between values submitted and their Kick leaves none of them behind, and
// GPPut never goes back.
func TestKickUploadBetween(t *testing.T) {
	r := openRaw(t, Config{})
	e := r.entry("empty")
	r.submitOnly(launch(e, 1, 32, nil))
	r.submitOnly(copyPart(qCopy, r.alloc(device.DeviceMemory, 256), r.alloc(device.DeviceMemory, 256), 0, 0, 256))
	r.entry("empty") // a second image: its upload kicks both channels
	r.d.Kick(r.v)
	r.wait(r.v)
	for _, ch := range r.d.ch {
		if got, want := uint64(atomic.LoadUint32(ch.gpPut)), ch.put%ch.entries; got != want {
			t.Errorf("the %s channel's GPPut is %d, want %d", ch.name, got, want)
		}
	}
}

// TestKickSubmitters races 64 submitters through rig on the fake: every
// value runs (each point is reached, each fill lands) and bursts share
// doorbells.
func TestKickSubmitters(t *testing.T) {
	f := newFake()
	dev, err := rig.Open(bg, f.opener(Config{}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = dev.Close(); <-dev.Done() }()
	rings := f.ringCount()
	n := submitters(t, dev, 64, 30, 0)
	t.Logf("%d doorbells for %d submissions", f.ringCount()-rings, n)
}

// TestGPUSubmitters races 64 submitters through rig on GPU 0 for 3 s:
// each submits an empty launch, or a fill of its own Pinned bytes on
// COPY:0 followed by that launch, and waits for its point; every point is
// reached and every fill lands. A kick that let the GPU fetch an entry
// before its words reached it would fault the channel.
func TestGPUSubmitters(t *testing.T) {
	dev := openRig(t, Config{})
	n := submitters(t, dev, 64, 0, 3*time.Second)
	t.Logf("%d submissions in 3 s", n)
}

// submitters runs goroutines submitters on dev, each each times or for
// dur, and returns the submissions.
func submitters(t *testing.T, dev *rig.Device, goroutines, each int, dur time.Duration) int {
	t.Helper()
	fn := emptyFn(t, dev)
	s, err := rig.NewSubmission(dev, rig.Launch(fn, 0))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var total atomic.Int64
	errs := make(chan error, goroutines)
	end := time.Now().Add(dur)
	for g := range goroutines {
		buf, err := dev.Alloc(device.PinnedMemory, 64)
		if err != nil {
			t.Fatal(err)
		}
		// Fills of the submitter's byte and of 0, each before a launch.
		var fills [2]*rig.Submission
		for k, v := range []byte{byte(g + 1), 0} {
			if fills[k], err = rig.NewSubmission(dev, rig.FillBytes(0, 0, 64, v).On(1), rig.Launch(fn, 0)); err != nil {
				t.Fatal(err)
			}
		}
		wg.Go(func() {
			for i := 0; (each > 0 && i < each) || (each == 0 && time.Now().Before(end)); i++ {
				var p rig.Point
				var err error
				b := [2]byte{byte(g + 1), 0}[i%4/2]
				if i%2 == 0 {
					run := s.Take()
					run.Threads(0, 32, 1, 1)
					p, err = run.Submit(bg)
				} else {
					run := fills[i%4/2].Take()
					run.Threads(1, 32, 1, 1)
					p, err = run.Submit(bg, buf)
				}
				if err == nil {
					ctx, cancel := context.WithTimeout(bg, 10*time.Second)
					err = p.Wait(ctx)
					cancel()
				}
				if err == nil && i%2 == 1 {
					for j, x := range buf.Bytes() {
						if x != b {
							err = fmt.Errorf("submitter %d, submission %d: byte %d of its fill reads 0x%x, want 0x%x", g, i, j, x, b)
							break
						}
					}
				}
				if err != nil {
					errs <- err
					return
				}
				total.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if last := dev.Last(); !last.Reached() {
		t.Fatalf("the last value %d is not reached", last.Value())
	}
	return int(total.Load())
}

// emptyFn is the test cubin's empty kernel on dev.
func emptyFn(t testing.TB, dev *rig.Device) *rig.Function {
	t.Helper()
	img, err := dev.LoadImage(cubin(t))
	if err != nil {
		t.Fatal(err)
	}
	fn, err := img.Resolve("empty")
	if err != nil {
		t.Fatal(err)
	}
	return fn
}

// BenchmarkGPUSubmitters is rigbench's closed loop on GPU 0 through rig:
// c goroutines each submit a launch of empty and wait for its point, b.N
// submissions in all, where the kicks are combined after the submit lock
// (kick) and where each Submit kicks under it, as before (submit). It
// reports submissions/s and the latency's p50, p99 and max (ns).
func BenchmarkGPUSubmitters(b *testing.B) {
	for _, c := range []int{1, 16, 64} {
		for _, own := range []bool{false, true} {
			name := "kick"
			if own {
				name = "submit"
			}
			b.Run(fmt.Sprintf("c=%d/%s", c, name), func(b *testing.B) {
				benchSubmitters(b, Config{submitKicks: own}, c)
			})
		}
	}
}

func benchSubmitters(b *testing.B, c Config, goroutines int) {
	s := rigEmpty(b, c)
	ctx := ctxFor(b, 120*time.Second)
	step := func() (time.Duration, error) {
		start := time.Now()
		run := s.Take()
		run.Threads(0, 32, 1, 1)
		p, err := run.Submit(ctx)
		if err == nil {
			err = p.Wait(ctx)
		}
		return time.Since(start), err
	}
	for range 1000 {
		if _, err := step(); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	lats := make([][]time.Duration, goroutines)
	errs := make([]error, goroutines)
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	t0 := time.Now()
	for g := range goroutines {
		lats[g] = make([]time.Duration, 0, b.N/goroutines+1)
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				d, err := step()
				if err != nil {
					errs[g] = err
					return
				}
				lats[g] = append(lats[g], d)
			}
		})
	}
	wg.Wait()
	el := time.Since(t0)
	b.StopTimer()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	all := slices.Concat(lats...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	b.ReportMetric(float64(len(all))/el.Seconds(), "subs/s")
	b.ReportMetric(float64(all[len(all)/2].Nanoseconds()), "ns-p50")
	b.ReportMetric(float64(all[len(all)*99/100].Nanoseconds()), "ns-p99")
	b.ReportMetric(float64(all[len(all)-1].Nanoseconds()), "ns-max")
}

// BenchmarkGPUHold is what rig's submit lock holds on GPU 0 now, Room and
// Submit of a launch of empty (ns-hold, median), against the Kick that
// follows it outside the lock (ns-kick, median): the stores, against the
// store of GPPut, the read of the flush word and the doorbell.
func BenchmarkGPUHold(b *testing.B) { benchHold(b, Config{}) }

func benchHold(b *testing.B, c Config) {
	r := benchRaw(b, c)
	e := r.entry("empty")
	s := device.Submission{Parts: []device.Part{launch(e, 1, 32, nil)}}
	hold := make([]time.Duration, 0, 1<<16)
	kick := make([]time.Duration, 0, 1<<16)
	for range 100 {
		rawValue(r, &s)
	}
	r.wait(r.v)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i%512 == 511 {
			r.wait(r.v)
		}
		r.v++
		s.Value = r.v
		t0 := time.Now()
		for a := r.d.Room(&s); a.Kind != device.RoomOK; a = r.d.Room(&s) {
			if a.Kind != device.RoomLater {
				b.Fatalf("room: %+v", a)
			}
			r.pump()
		}
		r.d.Submit(&s)
		t1 := time.Now()
		r.d.Kick(r.v)
		t2 := time.Now()
		if len(hold) < cap(hold) {
			hold, kick = append(hold, t1.Sub(t0)), append(kick, t2.Sub(t1))
		}
	}
	b.StopTimer()
	r.wait(r.v)
	for _, m := range []struct {
		lat  []time.Duration
		unit string
	}{{hold, "ns-hold"}, {kick, "ns-kick"}} {
		if len(m.lat) > 0 {
			slices.Sort(m.lat)
			b.ReportMetric(float64(m.lat[len(m.lat)/2].Nanoseconds()), m.unit)
		}
	}
}

// TestKickClose closes a device on the fake while 16 submitters submit
// through rig: Kicks that race the Stop end before it or find the device
// stopped, and every submitter ends with its work done or ErrClosed.
func TestKickClose(t *testing.T) {
	f := newFake()
	dev, err := rig.Open(bg, f.opener(Config{}))
	if err != nil {
		t.Fatal(err)
	}
	s, err := rig.NewSubmission(dev, rig.Launch(emptyFn(t, dev), 0))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var done atomic.Int64
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			for {
				run := s.Take()
				run.Threads(0, 32, 1, 1)
				p, err := run.Submit(bg)
				if err == nil {
					err = p.Wait(bg)
				}
				if errors.Is(err, rig.ErrClosed) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
				done.Add(1)
			}
		})
	}
	for done.Load() < 200 {
		time.Sleep(100 * time.Microsecond)
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	<-dev.Done()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
