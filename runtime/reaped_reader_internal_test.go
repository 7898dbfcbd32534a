package rig

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"
	"weak"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
)

// TestReadByReapedDeviceLetsItGo: a buffer that lives on, such as a model's
// weights, read by devices that are closed and opened again (a server that
// reopens a lost device), keeps no closed device once it gave everything
// back: its reads, which the next write would clear, would otherwise hold
// every reader ever closed, with its driver, mailbox and submit lock.
func TestReadByReapedDeviceLetsItGo(t *testing.T) {
	ctx := context.Background()
	name := "reaped-reader-" + strconv.FormatInt(keptRunNames.Add(1), 10)
	a, err := Open(ctx, hostdev.Open(hostdev.Config{Name: name + "-a"}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = a.Close(); <-a.Done() }()
	const n = 64
	x, err := a.Alloc(device.PinnedMemory, n)
	if err != nil {
		t.Fatal(err)
	}
	// Each reader reads x once, and is closed and given back.
	read := func(i int) weak.Pointer[Device] {
		b, err := Open(ctx, hostdev.Open(hostdev.Config{Name: name + "-b" + strconv.Itoa(i)}))
		if err != nil {
			t.Fatal(err)
		}
		y, err := b.Alloc(device.PinnedMemory, n)
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewSubmission(b, Copy(0, 0, 1, 0, n))
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Take().Submit(ctx, x, y)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		<-b.Done()
		return weak.Make(b)
	}
	var gone []weak.Pointer[Device]
	for i := range 3 {
		gone = append(gone, read(i))
	}
	// A read by a device still open comes after them.
	c, err := Open(ctx, hostdev.Open(hostdev.Config{Name: name + "-c"}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close(); <-c.Done() }()
	z, err := c.Alloc(device.PinnedMemory, n)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSubmission(c, Copy(0, 0, 1, 0, n))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Take().Submit(ctx, x, z)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
	held := 0
	for _, w := range gone {
		if w.Value() != nil {
			held++
		}
	}
	x.s.mu.Lock()
	reads := len(x.s.reads)
	x.s.mu.Unlock()
	if held > 0 {
		t.Errorf("%d of 3 devices that read a live buffer, closed and given back, are still reachable after 5 collections; the buffer holds %d reads", held, reads)
	}
	runtime.KeepAlive(x)
	runtime.KeepAlive(z)
}
