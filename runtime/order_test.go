package rig_test

import (
	"context"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// The order of the parts of one submission by their buffers, on the host
// driver: a part on one queue runs after the earlier parts on the other
// queue that conflict with it, and beside those that do not.

// signals are the channels test_signal closes, by the number its
// parameters hold.
var signals sync.Map

// signal is a channel for test_signal and its number.
func signal() (chan struct{}, uint64) {
	ch := make(chan struct{})
	n := uint64(names.Add(1))
	signals.Store(n, ch)
	return ch, n
}

func init() {
	// signal closes the channel of signals whose number is the 8 bytes at
	// 0. One thread.
	hostdev.RegisterParams("test_signal", 8, func(k *hostdev.Ctx) {
		if ch, ok := signals.LoadAndDelete(k.Uint64(0)); ok {
			close(ch.(chan struct{}))
		}
	})
}

func floats(b *rig.Buffer) []float32 {
	p := b.Bytes()
	return unsafe.Slice((*float32)(unsafe.Pointer(&p[0])), len(p)/4)
}

// orderRun submits a run of s with 256 threads in each launch part and
// waits for it.
func orderRun(t *testing.T, s *rig.Submission, launches []int, bufs ...*rig.Buffer) {
	t.Helper()
	r := s.Take()
	for _, i := range launches {
		r.Threads(i, 256, 1, 1)
	}
	p, err := r.Submit(context.Background(), bufs...)
	if err != nil {
		t.Fatal(err)
	}
	wait(t, p)
}

// TestPartsOrderedByBuffers submits a slow fill of x on COPY:0, a launch
// that doubles x on COMPUTE:0 and a copy of x to out on COPY:0, with no
// After: the launch must wait for the fill, and the copy for the launch.
// Without the order the launch doubles what x held before the fill. The
// same holds where the launch names x through another buffer index.
func TestPartsOrderedByBuffers(t *testing.T) {
	d := host(t, hostdev.Config{})
	twice := fn(t, d, "twice")
	x := alloc(t, d, device.PinnedMemory, 4*256)
	out := alloc(t, d, device.PinnedMemory, 4*256)
	var v float32
	fill := hostdev.FillFunc(func(uintptr) {
		time.Sleep(2 * time.Millisecond)
		for i := range floats(x) {
			floats(x)[i] = v
		}
	})
	cases := []struct {
		name  string
		parts []rig.Part
		bufs  []*rig.Buffer
	}{
		{"one index", []rig.Part{
			rig.Fill(fill, 0, rig.Uses(0, rig.Writes)),
			rig.Launch(twice, 8, rig.ReadWrite(0, 0)),
			rig.Copy(0, 0, 1, 0, 4*256),
		}, []*rig.Buffer{x, out}},
		{"two indices", []rig.Part{
			rig.Fill(fill, 0, rig.Uses(0, rig.Writes)),
			rig.Launch(twice, 8, rig.ReadWrite(2, 0)),
			rig.Copy(0, 0, 1, 0, 4*256),
		}, []*rig.Buffer{x, out, x}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := sub(t, d, c.parts...)
			for it := range 20 {
				v = float32(it + 1)
				clear(out.Bytes())
				orderRun(t, s, []int{1}, c.bufs...)
				want := 2 * v
				for i, got := range floats(out) {
					if got != want {
						t.Fatalf("iteration %d: out[%d] = %v, want %v: the parts ran out of their buffers' order", it, i, got, want)
					}
				}
			}
		})
	}
}

// TestPartsWriteAfterRead submits a slow read of x on COPY:0 (a fill that
// copies x to out) and a launch that doubles x on COMPUTE:0: the launch
// must wait for the read. Without the order the read sees x doubled.
func TestPartsWriteAfterRead(t *testing.T) {
	d := host(t, hostdev.Config{})
	x := alloc(t, d, device.PinnedMemory, 4*256)
	out := alloc(t, d, device.PinnedMemory, 4*256)
	read := hostdev.FillFunc(func(uintptr) {
		time.Sleep(2 * time.Millisecond)
		copy(out.Bytes(), x.Bytes())
	})
	s := sub(t, d,
		rig.Fill(read, 0, rig.Uses(0, rig.Reads), rig.Uses(1, rig.Writes)),
		rig.Launch(fn(t, d, "twice"), 8, rig.ReadWrite(0, 0)))
	for it := range 20 {
		v := float32(it + 1)
		for i := range floats(x) {
			floats(x)[i] = v
		}
		orderRun(t, s, []int{1}, x, out)
		for i := range floats(out) {
			if got := floats(out)[i]; got != v {
				t.Fatalf("iteration %d: out[%d] = %v, want %v: the launch wrote x before the read of it", it, i, got, v)
			}
			if got := floats(x)[i]; got != 2*v {
				t.Fatalf("iteration %d: x[%d] = %v, want %v", it, i, got, 2*v)
			}
		}
	}
}

// TestPartsCopyLaunchCopy is the first program of a new user: a copy of
// host memory into x, a launch that doubles x and a copy of x back, with
// the default queues and no After, many times over.
func TestPartsCopyLaunchCopy(t *testing.T) {
	d := host(t, hostdev.Config{})
	in := alloc(t, d, device.PinnedMemory, 4*4096)
	x := alloc(t, d, device.DeviceMemory, 4*4096)
	out := alloc(t, d, device.PinnedMemory, 4*4096)
	s := sub(t, d,
		rig.Copy(0, 0, 1, 0, 4*4096),
		rig.Launch(fn(t, d, "twice"), 8, rig.ReadWrite(1, 0)),
		rig.Copy(1, 0, 2, 0, 4*4096))
	for it := range 200 {
		for i := range floats(in) {
			floats(in)[i] = float32(it + i)
		}
		clear(out.Bytes())
		r := s.Take()
		r.Groups(1, 16, 1, 1)
		r.Threads(1, 256, 1, 1)
		p, err := r.Submit(context.Background(), in, x, out)
		if err != nil {
			t.Fatal(err)
		}
		wait(t, p)
		for i, got := range floats(out) {
			if want := 2 * float32(it+i); got != want {
				t.Fatalf("iteration %d: out[%d] = %v, want %v", it, i, got, want)
			}
		}
	}
}

// TestPartsSideBySide submits parts on two queues that share no buffer
// written: they run at once. The fill on COPY:0 blocks until the launch on
// COMPUTE:0 after it has run, which only parts side by side do.
func TestPartsSideBySide(t *testing.T) {
	d := host(t, hostdev.Config{})
	a := alloc(t, d, device.PinnedMemory, 64)
	b := alloc(t, d, device.PinnedMemory, 64)
	for _, c := range []struct {
		name     string
		fillRefs []rig.Ref
		sigRefs  []rig.Ref
	}{
		{"no buffers", nil, nil},
		{"different buffers", []rig.Ref{rig.Uses(0, rig.Writes)}, []rig.Ref{rig.Uses(1, rig.Writes)}},
		{"reads of one buffer", []rig.Ref{rig.Uses(0, rig.Reads)}, []rig.Ref{rig.Uses(0, rig.Reads)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ch, n := signal()
			late := false
			fill := hostdev.FillFunc(func(uintptr) {
				select {
				case <-ch:
				case <-time.After(5 * time.Second):
					late = true
				}
			})
			s := sub(t, d,
				rig.Fill(fill, 0, c.fillRefs...),
				rig.Launch(fn(t, d, "test_signal"), 8, c.sigRefs...))
			r := s.Take()
			binary.LittleEndian.PutUint64(r.Params(1), n)
			p, err := r.Submit(context.Background(), a, b)
			if err != nil {
				t.Fatal(err)
			}
			wait(t, p)
			if late {
				t.Fatal("the launch ran after the fill: parts with no conflict were ordered")
			}
		})
	}
}

// TestPartsKeepAfter: an After that no buffer states still orders its
// parts.
func TestPartsKeepAfter(t *testing.T) {
	d := host(t, hostdev.Config{})
	var done atomic.Bool
	fill := hostdev.FillFunc(func(uintptr) {
		time.Sleep(2 * time.Millisecond)
		done.Store(true)
	})
	ch, n := signal()
	s := sub(t, d,
		rig.Fill(fill, 0),
		rig.Launch(fn(t, d, "test_signal"), 8).After(0))
	r := s.Take()
	binary.LittleEndian.PutUint64(r.Params(1), n)
	p, err := r.Submit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	<-ch
	if !done.Load() {
		t.Fatal("the launch ran before the fill it runs after")
	}
	wait(t, p)
}

// TestPartsOrderAllocs guards the order's cost: Take + Submit of a copy, a
// launch and a copy on two queues allocates nothing in steady state.
func TestPartsOrderAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation allocates")
	}
	d := host(t, hostdev.Config{})
	in := alloc(t, d, device.PinnedMemory, 4*256)
	x := alloc(t, d, device.PinnedMemory, 4*256)
	s := sub(t, d,
		rig.Copy(0, 0, 1, 0, 4*256),
		rig.Launch(fn(t, d, "twice"), 8, rig.ReadWrite(1, 0)),
		rig.Copy(1, 0, 0, 0, 4*256))
	ctx := context.Background()
	var p rig.Point
	step := func() {
		r := s.Take()
		r.Threads(1, 256, 1, 1)
		var err error
		if p, err = r.Submit(ctx, in, x); err != nil {
			t.Fatal(err)
		}
	}
	for range 100 {
		step()
	}
	wait(t, p)
	if n := testing.AllocsPerRun(200, step); n != 0 {
		t.Fatalf("Take + Submit of parts on two queues allocates %v times a run", n)
	}
	wait(t, p)
}
