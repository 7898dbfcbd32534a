package rig_test

import (
	"context"
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

var names atomic.Int64

// host opens a host device of a fresh name, closed when the test ends.
func host(t testing.TB, c hostdev.Config) *rig.Device {
	t.Helper()
	if c.Name == "" {
		c.Name = "test-" + itoa(names.Add(1))
	}
	d, err := rig.Open(context.Background(), hostdev.Open(c))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = d.Close()
		select {
		case <-d.Done():
		case <-time.After(10 * time.Second):
			t.Errorf("device %s did not give its memory back after Close", d.Name())
		}
	})
	return d
}

func itoa(n int64) string {
	b := make([]byte, 0, 20)
	if n == 0 {
		return "0"
	}
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// fn loads the named kernels on d and resolves the first.
func fn(t testing.TB, d *rig.Device, name string) *rig.Function {
	t.Helper()
	img, err := d.LoadImage(hostdev.ImageOf(name))
	if err != nil {
		t.Fatal(err)
	}
	f, err := img.Resolve(name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func sub(t testing.TB, d *rig.Device, parts ...rig.Part) *rig.Submission {
	t.Helper()
	s, err := rig.NewSubmission(d, parts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func alloc(t testing.TB, d *rig.Device, kind device.Memory, n int) *rig.Buffer {
	t.Helper()
	b, err := d.Alloc(kind, n)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func wait(t testing.TB, p rig.Point) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// sleepFor is a run of a "sleep" launch of ns nanoseconds.
func sleepRun(s *rig.Submission, ns time.Duration) *rig.Run {
	r := s.Take()
	binary.LittleEndian.PutUint64(r.Params(0), uint64(ns))
	return r
}
