package rig_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

func init() {
	// slowfill sleeps for the nanoseconds at 24, then sets the n bytes (at
	// 8) at the address at 0 to the byte at 16. One thread.
	hostdev.RegisterParams("test_slowfill", 32, func(k *hostdev.Ctx) {
		time.Sleep(time.Duration(k.Uint64(24)))
		b := k.Bytes(k.Uint64(0), int(k.Uint64(8)))
		for i := range b {
			b[i] = k.Params[16]
		}
	})
	// slowsum sleeps for the nanoseconds at 24, then writes the sum of the
	// n bytes (at 8) at the address at 0 into the 8 bytes at the address
	// at 16. One thread.
	hostdev.RegisterParams("test_slowsum", 32, func(k *hostdev.Ctx) {
		time.Sleep(time.Duration(k.Uint64(24)))
		var sum uint64
		for _, c := range k.Bytes(k.Uint64(0), int(k.Uint64(8))) {
			sum += uint64(c)
		}
		binary.LittleEndian.PutUint64(k.Bytes(k.Uint64(16), 8), sum)
	})
}

const slow = 30 * time.Millisecond

// slowFill submits on d a launch that writes b's n bytes to v after a delay.
func slowFill(t *testing.T, d *rig.Device, b *rig.Buffer, v byte) rig.Point {
	t.Helper()
	s := sub(t, d, rig.Launch(fn(t, d, "test_slowfill"), 32, rig.Write(0, 0)))
	r := s.Take()
	binary.LittleEndian.PutUint64(r.Params(0)[8:], uint64(b.Len()))
	r.Params(0)[16] = v
	binary.LittleEndian.PutUint64(r.Params(0)[24:], uint64(slow))
	p, err := r.Submit(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// slowSum submits on d a launch that reads b after a delay and writes the
// sum of its bytes into out.
func slowSum(t *testing.T, d *rig.Device, b, out *rig.Buffer) rig.Point {
	t.Helper()
	s := sub(t, d, rig.Launch(fn(t, d, "test_slowsum"), 32, rig.Read(0, 0), rig.Write(1, 16)))
	r := s.Take()
	binary.LittleEndian.PutUint64(r.Params(0)[8:], uint64(b.Len()))
	binary.LittleEndian.PutUint64(r.Params(0)[24:], uint64(slow))
	p, err := r.Submit(context.Background(), b, out)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func fill(t *testing.T, d *rig.Device, b *rig.Buffer, v byte, queue int) rig.Point {
	t.Helper()
	return submit(t, sub(t, d, rig.FillBytes(0, 0, uint64(b.Len()), v).On(queue)), b)
}

func submit(t *testing.T, s *rig.Submission, bufs ...*rig.Buffer) rig.Point {
	t.Helper()
	p, err := s.Take().Submit(context.Background(), bufs...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func allBytes(t *testing.T, b *rig.Buffer, want byte) {
	t.Helper()
	for i, c := range b.Bytes() {
		if c != want {
			t.Fatalf("byte %d of %d is %d, want %d", i, b.Len(), c, want)
		}
	}
}

func TestHazards(t *testing.T) {
	const n = 4096
	cases := []struct {
		name string
		run  func(t *testing.T, a, b, c *rig.Device)
	}{
		{"read after write, across queues", func(t *testing.T, a, _, _ *rig.Device) {
			x, y := alloc(t, a, device.PinnedMemory, n), alloc(t, a, device.PinnedMemory, n)
			slowFill(t, a, x, 7)
			wait(t, submit(t, sub(t, a, rig.Copy(0, 0, 1, 0, n)), x, y))
			allBytes(t, y, 7)
		}},
		{"write after read, across queues", func(t *testing.T, a, _, _ *rig.Device) {
			x, z := alloc(t, a, device.PinnedMemory, n), alloc(t, a, device.PinnedMemory, 8)
			copy(x.Bytes(), make([]byte, n))
			for i := range x.Bytes() {
				x.Bytes()[i] = 1
			}
			slowSum(t, a, x, z)
			wait(t, fill(t, a, x, 0, device.Copy))
			if got := binary.LittleEndian.Uint64(z.Bytes()); got != n {
				t.Fatalf("the read summed %d, want %d: the write ran before it", got, n)
			}
		}},
		{"read after write, across devices", func(t *testing.T, a, b, _ *rig.Device) {
			x, y := alloc(t, a, device.PinnedMemory, n), alloc(t, b, device.PinnedMemory, n)
			slowFill(t, a, x, 9)
			wait(t, submit(t, sub(t, b, rig.Copy(0, 0, 1, 0, n)), x, y))
			allBytes(t, y, 9)
		}},
		{"write after read, across devices", func(t *testing.T, a, b, _ *rig.Device) {
			x, z := alloc(t, a, device.PinnedMemory, n), alloc(t, a, device.PinnedMemory, 8)
			for i := range x.Bytes() {
				x.Bytes()[i] = 2
			}
			slowSum(t, a, x, z)
			wait(t, fill(t, b, x, 0, device.Compute))
			if got := binary.LittleEndian.Uint64(z.Bytes()); got != 2*n {
				t.Fatalf("the read summed %d, want %d: the other device's write ran before it", got, 2*n)
			}
			allBytes(t, x, 0)
		}},
		{"write after write, across devices", func(t *testing.T, a, b, _ *rig.Device) {
			x := alloc(t, a, device.PinnedMemory, n)
			slowFill(t, a, x, 1)
			wait(t, fill(t, b, x, 2, device.Copy))
			wait(t, a.Last())
			allBytes(t, x, 2)
		}},
		{"write after reads on two devices", func(t *testing.T, a, b, c *rig.Device) {
			x := alloc(t, a, device.PinnedMemory, n)
			z1, z2 := alloc(t, a, device.PinnedMemory, 8), alloc(t, b, device.PinnedMemory, 8)
			for i := range x.Bytes() {
				x.Bytes()[i] = 3
			}
			slowSum(t, a, x, z1)
			slowSum(t, b, x, z2)
			wait(t, fill(t, c, x, 0, device.Copy))
			wait(t, a.Last())
			wait(t, b.Last())
			for i, z := range []*rig.Buffer{z1, z2} {
				if got := binary.LittleEndian.Uint64(z.Bytes()); got != 3*n {
					t.Fatalf("read %d summed %d, want %d", i, got, 3*n)
				}
			}
		}},
		{"chain across three devices", func(t *testing.T, a, b, c *rig.Device) {
			x, y, w := alloc(t, a, device.PinnedMemory, n), alloc(t, b, device.PinnedMemory, n), alloc(t, c, device.PinnedMemory, n)
			slowFill(t, a, x, 5)
			submit(t, sub(t, b, rig.Copy(0, 0, 1, 0, n)), x, y)
			wait(t, submit(t, sub(t, c, rig.Copy(0, 0, 1, 0, n)), y, w))
			allBytes(t, w, 5)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, host(t, hostdev.Config{}), host(t, hostdev.Config{}), host(t, hostdev.Config{}))
		})
	}
}
