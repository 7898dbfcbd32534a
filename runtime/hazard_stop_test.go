package rig_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	"github.com/rig-go/rig/internal/testutil"
	rig "github.com/rig-go/rig/runtime"
)

// holdOn submits on d a fill part that uses b as use says and runs until
// release is closed; it returns once the part runs, with its point.
func holdOn(t *testing.T, d *rig.Device, b *rig.Buffer, use rig.Access, release chan struct{}) rig.Point {
	t.Helper()
	started := make(chan struct{})
	hold := hostdev.FillFunc(func(uintptr) {
		close(started)
		<-release
	})
	p := submit(t, sub(t, d, rig.Fill(hold, 0, rig.Uses(0, use))), b)
	select {
	case <-started:
	case <-time.After(testutil.Timeout):
		t.Fatal("the holding part did not start")
	}
	return p
}

// TestFreeAfterStoppedWriter frees a buffer of device a whose last write
// is work of device c that waits, on c's side, for a read of device b that
// still runs; c is then closed, which drops the write and raises c's word
// past it. The read still uses the buffer: Free must hold the memory until
// the read's point is reached, not give it back at the write's.
func TestFreeAfterStoppedWriter(t *testing.T) {
	for _, use := range []rig.Access{rig.Reads, rig.Writes} {
		t.Run(map[rig.Access]string{rig.Reads: "read", rig.Writes: "write"}[use], func(t *testing.T) {
			a, b := host(t, hostdev.Config{}), host(t, hostdev.Config{})
			c := host(t, hostdev.Config{})
			const n = 4096
			x := alloc(t, a, device.PinnedMemory, n)
			release := make(chan struct{})
			defer func() {
				select {
				case <-release:
				default:
					close(release)
				}
			}()
			pb := holdOn(t, b, x, use, release)
			// c's write waits on c's side for b's use of x.
			submit(t, sub(t, c, rig.FillBytes(0, 0, n, 1)), x)
			if !testutil.CloseDone(t, c) {
				return
			}
			before, _ := a.Budget()
			if err := x.Free(); err != nil {
				t.Fatal(err)
			}
			if used, _ := a.Budget(); used != before {
				t.Fatalf("Free gave back %d bytes while b's work still uses the buffer", before-used)
			}
			close(release)
			if err := pb.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			for end := time.Now().Add(testutil.Timeout); ; time.Sleep(time.Millisecond) {
				if used, _ := a.Budget(); used == before-n {
					break
				}
				if time.Now().After(end) {
					used, _ := a.Budget()
					t.Fatalf("the buffer was not given back once b's work ended: %d bytes used, want %d", used, before-n)
				}
			}
		})
	}
}

// TestWriteAfterStoppedWriter: device b's work uses a buffer of device a
// and runs on; device c's write of the buffer waits for it on c's side,
// and device f's write waits on f's side for c's. Closing c drops c's
// write and raises c's word past it, which loses f (its work waits for a
// point c never reaches) but lets f's held work run: that work must still
// not write the buffer while b's work uses it.
func TestWriteAfterStoppedWriter(t *testing.T) {
	for _, use := range []rig.Access{rig.Reads, rig.Writes} {
		t.Run(map[rig.Access]string{rig.Reads: "read", rig.Writes: "write"}[use], func(t *testing.T) {
			a, b := host(t, hostdev.Config{}), host(t, hostdev.Config{})
			c, f := host(t, hostdev.Config{}), host(t, hostdev.Config{})
			const n = 4096
			x := alloc(t, a, device.PinnedMemory, n)
			release := make(chan struct{})
			var bDone, early atomic.Bool
			defer func() {
				if !bDone.Load() {
					close(release)
				}
			}()
			started := make(chan struct{})
			hold := hostdev.FillFunc(func(uintptr) {
				close(started)
				<-release
				bDone.Store(true)
			})
			pb := submit(t, sub(t, b, rig.Fill(hold, 0, rig.Uses(0, use))), x)
			<-started
			submit(t, sub(t, c, rig.FillBytes(0, 0, n, 1)), x)
			ran := make(chan struct{})
			write := hostdev.FillFunc(func(uintptr) {
				early.Store(!bDone.Load())
				close(ran)
			})
			submit(t, sub(t, f, rig.Fill(write, 0, rig.Uses(0, rig.Writes))), x)
			if !testutil.CloseDone(t, c) {
				return
			}
			select {
			case <-ran:
			case <-time.After(200 * time.Millisecond):
			}
			bDone.Store(true)
			close(release)
			if err := pb.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			select {
			case <-ran:
			case <-time.After(testutil.Timeout):
				t.Fatal("f's held write never ran")
			}
			if early.Load() {
				t.Fatal("f's write ran while b's work still used the buffer")
			}
		})
	}
}

// TestLastUseAfterOtherDevicesWrite: device b writes a buffer of device a,
// then a's own work reads it and runs on. Values of two devices do not
// compare: LastUse must name a's read, which follows b's write, however
// far b's values lie ahead of a's.
func TestLastUseAfterOtherDevicesWrite(t *testing.T) {
	a, b := host(t, hostdev.Config{}), host(t, hostdev.Config{})
	const n = 64
	x := alloc(t, a, device.PinnedMemory, n)
	y := alloc(t, b, device.PinnedMemory, n)
	touch := sub(t, b, rig.FillBytes(0, 0, n, 0))
	for b.Last().Value()-a.Last().Value() < 8 {
		submit(t, touch, y)
	}
	wait(t, fill(t, b, x, 1, device.Copy))
	release := make(chan struct{})
	defer close(release)
	pa := holdOn(t, a, x, rig.Reads, release)
	if got := x.LastUse(); got != pa {
		t.Fatalf("LastUse is value %d of %s, want the read's, value %d of %s", got.Value(), got.Device().Name(), pa.Value(), a.Name())
	}
}
