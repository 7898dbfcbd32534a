package rig

import (
	"context"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// stopGate is a fake whose Stop waits until gate is closed, so that its
// device stays closing, and its views of other devices' buffers stay, for
// as long as a test holds it there.
type stopGate struct {
	*fake
	gate chan struct{}
}

func (g *stopGate) Stop(fault string) error {
	<-g.gate
	return g.fake.Stop(fault)
}

// leftRegion opens device a and device b, whose Stop waits for gate, with
// a buffer x of a that b's work read; it starts b's Close and frees x as b
// closes, so that x's release leaves its region to the drop of b's view
// of it at b's reaping.
func leftRegion(t *testing.T, name string) (a, b *Device, fa *fake, gate chan struct{}, x *Buffer) {
	t.Helper()
	fa, fb := newFake(), newFake()
	fa.peer, fb.peer = true, true
	gate = make(chan struct{})
	a = openFake(t, name+"-a", fa)
	b = openWith(t, device.Opener{Name: name + "-b", Make: func(w *uint64) (device.Driver, error) {
		fb.facts.Word = w
		return &stopGate{fake: fb, gate: gate}, nil
	}})
	t.Cleanup(func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	})
	x, err := a.Alloc(device.DeviceMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := submit(t, launchOn(t, b, Read(0, 0)), x).Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	go func() { _ = b.Close() }()
	for !b.closing.Load() {
		time.Sleep(time.Millisecond)
	}
	if err := x.Free(); err != nil {
		t.Fatal(err)
	}
	x.s.mu.Lock()
	left := x.s.regionLeft
	x.s.mu.Unlock()
	if !left {
		t.Fatal("x's release did not leave its region to b's view")
	}
	return a, b, fa, gate, x
}

// TestLeftRegionBesideOwnerClose: the region of a buffer of device a,
// whose release left it to the drop of device b's view at b's reaping, is
// given back by that reaping while a closes: a's driver stops only once
// that Free returned, as for every Free that is not its supervisor's, and
// a's Done closes once the region is back.
func TestLeftRegionBesideOwnerClose(t *testing.T) {
	a, b, fa, gate, _ := leftRegion(t, "left-owner-close")
	reaped := func() error {
		close(gate)
		<-b.Done()
		return nil
	}
	stopped, done, err, cerr := besideClose(a, fa, onFree(fa), reaped, nil)
	if stopped || done {
		t.Errorf("while b's reaping freed the region of a's buffer: a's driver stopped %v, a's Done closed %v", stopped, done)
	}
	if err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	select {
	case <-a.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a's Done not closed")
	}
	fa.mu.Lock()
	defer fa.mu.Unlock()
	if fa.frees != 1 || !fa.stopped {
		t.Fatalf("a's driver: frees %d, stopped %v; want 1, true", fa.frees, fa.stopped)
	}
	if used, _ := a.Budget(); used != 0 {
		t.Fatalf("a's budget counts %d bytes after Done", used)
	}
}

// TestLeftRegionAfterOwnerStop: where device a closed, and stopped its
// driver, before device b's reaping dropped b's view of a's buffer, whose
// release left its region to that drop, the region goes back once the
// view is dropped, after a's stop, and a's Done waits for it.
func TestLeftRegionAfterOwnerStop(t *testing.T) {
	a, b, fa, gate, _ := leftRegion(t, "left-owner-stop")
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Done():
		t.Fatal("a's Done closed while b held its view of a's buffer")
	case <-time.After(50 * time.Millisecond):
	}
	fa.mu.Lock()
	frees := fa.frees
	fa.mu.Unlock()
	if frees != 0 {
		t.Fatalf("a's driver freed %d regions while b held its view of a's buffer", frees)
	}
	close(gate)
	for _, d := range []*Device{b, a} {
		select {
		case <-d.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("%s's Done not closed", d.name)
		}
	}
	fa.mu.Lock()
	defer fa.mu.Unlock()
	if fa.frees != 1 {
		t.Fatalf("a's driver freed %d regions, want 1", fa.frees)
	}
	if used, _ := a.Budget(); used != 0 {
		t.Fatalf("a's budget counts %d bytes after Done", used)
	}
}
