// Package gputest holds checks that the GPU drivers' tests share: each
// runs the same behaviour through rig on an open device, so that cudadev
// and nvdev are held to one standard.
package gputest

import (
	"context"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	rig "github.com/rig-go/rig/runtime"
)

// KernelArgs checks parameters set by index on dev, with the test image
// bin (the kernels mixed and saxpy): the functions' layouts, a launch of
// mixed with every parameter set through a typed setter, and saxpy over
// slices uploaded into Device memory and downloaded back.
func KernelArgs(t *testing.T, dev *rig.Device, bin []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	img, err := dev.LoadImage(bin)
	if err != nil {
		t.Fatal(err)
	}
	mixed, err := img.Resolve("mixed")
	if err != nil {
		t.Fatal(err)
	}
	want := []device.Param{{Offset: 0, Size: 1}, {Offset: 2, Size: 2}, {Offset: 8, Size: 8}, {Offset: 16, Size: 8}, {Offset: 24, Size: 8}}
	if got := mixed.Layout(); !equal(got, want) {
		t.Fatalf("mixed's layout is %v, want %v", got, want)
	}
	out, err := dev.Alloc(device.PinnedMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Free()
	s, err := rig.NewSubmission(dev, rig.Kernel(mixed, rig.WriteArg(0, 3)))
	if err != nil {
		t.Fatal(err)
	}
	r := s.Take()
	r.SetBytes(0, 0, []byte{'A'})
	r.SetBytes(0, 1, []byte{0xfd, 0xff}) // -3
	r.SetFloat64(0, 2, 12.75)
	r.SetInt64(0, 4, 1<<40+5)
	p, err := r.Submit(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	got := make([]int32, 4)
	if err := rig.Download(ctx, got, out, 0); err != nil {
		t.Fatal(err)
	}
	if got[0] != 'A' || got[1] != -3 || got[2] != 12 || got[3] != 5 {
		t.Fatalf("mixed wrote %v", got)
	}
	r = s.Take()
	r.SetFloat32(0, 2, 1)
	if _, err := r.Submit(ctx, out); err == nil {
		t.Fatal("a float32 set into mixed's double was submitted")
	}

	saxpy, err := img.Resolve("saxpy")
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	x, y := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = float32(i), float32(2*i+1)
	}
	bx, err := dev.Alloc(device.DeviceMemory, 4*n)
	if err != nil {
		t.Fatal(err)
	}
	defer bx.Free()
	by, err := dev.Alloc(device.DeviceMemory, 4*n)
	if err != nil {
		t.Fatal(err)
	}
	defer by.Free()
	if err := rig.Upload(ctx, bx, 0, x); err != nil {
		t.Fatal(err)
	}
	if err := rig.Upload(ctx, by, 0, y); err != nil {
		t.Fatal(err)
	}
	s, err = rig.NewSubmission(dev, rig.Kernel(saxpy, rig.ReadArg(0, 2), rig.ReadWriteArg(1, 3)))
	if err != nil {
		t.Fatal(err)
	}
	r = s.Take()
	r.Groups(0, (n+255)/256, 1, 1)
	r.Threads(0, 256, 1, 1)
	r.SetInt32(0, 0, n)
	r.SetFloat32(0, 1, 3)
	if _, err := r.Submit(ctx, bx, by); err != nil {
		t.Fatal(err)
	}
	res := make([]float32, n)
	if err := rig.Download(ctx, res, by, 0); err != nil {
		t.Fatal(err)
	}
	for i := range res {
		if res[i] != 3*x[i]+y[i] {
			t.Fatalf("saxpy: y[%d] = %v, want %v", i, res[i], 3*x[i]+y[i])
		}
	}
}

func equal(a, b []device.Param) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
