package rig_test

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

func init() {
	// args writes its parameters after the address in parameter 0, each
	// at its own offset, into the buffer there: a char, a uint32, a
	// float32, a uint64, a float64 and a 3-byte struct.
	hostdev.RegisterArgs("args", func(k *hostdev.Ctx) {
		out := k.Bytes(k.Uint64(0), 64)
		copy(out, k.Params[8:])
	}, 8, 1, 4, 4, 8, 8, 3)
	// untyped states only a count of parameter bytes.
	hostdev.RegisterParams("untyped", 16, func(*hostdev.Ctx) {})
}

func TestKernelLayout(t *testing.T) {
	d := host(t, hostdev.Config{})
	args := fn(t, d, "args")
	want := []device.Param{{Offset: 0, Size: 8}, {Offset: 8, Size: 1}, {Offset: 12, Size: 4}, {Offset: 16, Size: 4}, {Offset: 24, Size: 8}, {Offset: 32, Size: 8}, {Offset: 40, Size: 3}}
	if got := args.Layout(); len(got) != len(want) {
		t.Fatalf("layout %v, want %v", got, want)
	} else {
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("layout %v, want %v", got, want)
			}
		}
	}
	if args.Params() != 43 {
		t.Fatalf("%d parameter bytes, want 43", args.Params())
	}
	if fn(t, d, "untyped").Layout() != nil {
		t.Fatal("a kernel registered with a count states a layout")
	}
}

// TestKernelArgs sets every parameter by index and checks what the kernel
// read, and a buffer's address by parameter.
func TestKernelArgs(t *testing.T) {
	ctx := context.Background()
	d := host(t, hostdev.Config{})
	out := alloc(t, d, device.PinnedMemory, 64)
	s := sub(t, d, rig.Kernel(fn(t, d, "args"), rig.WriteArg(0, 0)))
	r := s.Take()
	r.SetBytes(0, 1, []byte{0xa5})
	r.SetInt32(0, 2, -7)
	r.SetFloat32(0, 3, 1.5)
	r.SetUint64(0, 4, 1<<40+3)
	r.SetFloat64(0, 5, -2.25)
	r.SetBytes(0, 6, []byte{1, 2, 3})
	p, err := r.Submit(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	wait(t, p)
	b := out.Bytes()
	if b[0] != 0xa5 || int32(binary.LittleEndian.Uint32(b[4:])) != -7 ||
		math.Float32frombits(binary.LittleEndian.Uint32(b[8:])) != 1.5 ||
		binary.LittleEndian.Uint64(b[16:]) != 1<<40+3 ||
		math.Float64frombits(binary.LittleEndian.Uint64(b[24:])) != -2.25 ||
		b[32] != 1 || b[33] != 2 || b[34] != 3 {
		t.Fatalf("the kernel read % x", b[:35])
	}

	x := alloc(t, d, device.DeviceMemory, 16)
	if err := rig.Upload(ctx, x, 0, []float32{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	tw := sub(t, d, rig.Kernel(fn(t, d, "twice"), rig.ReadWriteArg(0, 0)))
	r = tw.Take()
	r.Groups(0, 4, 1, 1)
	if _, err := r.Submit(ctx, x); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 4)
	if err := rig.Download(ctx, got, x, 0); err != nil {
		t.Fatal(err)
	}
	if got[0] != 2 || got[3] != 8 {
		t.Fatalf("twice by parameter: %v", got)
	}
}

func TestKernelArgRefusals(t *testing.T) {
	d := host(t, hostdev.Config{})
	args, untyped := fn(t, d, "args"), fn(t, d, "untyped")
	for _, c := range []struct {
		name string
		part rig.Part
		want string
	}{
		{"a ref to a parameter of 4 bytes", rig.Kernel(args, rig.ReadArg(0, 2)), "parameter 2 of \"args\" is 4 bytes"},
		{"a ref past the parameters", rig.Kernel(args, rig.ReadArg(0, 7)), "which has 7 parameters"},
		{"a ref to a negative parameter", rig.Kernel(args, rig.ReadArg(0, -1)), "negative parameter"},
		{"a ref to parameter math.MaxInt", rig.Kernel(args, rig.ReadArg(0, math.MaxInt)), "parameter 9223372036854775807 of \"args\", which has 7 parameters"},
		{"a ref by parameter without a layout", rig.Kernel(untyped, rig.ReadArg(0, 0)), "states no layout"},
	} {
		if _, err := rig.NewSubmission(d, c.part); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}

	out := alloc(t, d, device.PinnedMemory, 64)
	s := sub(t, d, rig.Kernel(args, rig.WriteArg(0, 0)), rig.FillBytes(0, 0, 1, 0))
	u := sub(t, d, rig.Kernel(untyped))
	for _, c := range []struct {
		name string
		s    *rig.Submission
		set  func(r *rig.Run)
		want string
	}{
		{"8 bytes into a 4-byte parameter", s, func(r *rig.Run) { r.SetUint64(0, 2, 1) }, "parameter 2 of \"args\" (part 0) is 4 bytes, and the value set is 8"},
		{"4 bytes into an 8-byte parameter", s, func(r *rig.Run) { r.SetFloat32(0, 5, 1) }, "is 8 bytes, and the value set is 4"},
		{"2 bytes into a 3-byte parameter", s, func(r *rig.Run) { r.SetBytes(0, 6, []byte{1, 2}) }, "is 3 bytes, and the value set is 2"},
		{"a parameter past the last", s, func(r *rig.Run) { r.SetUint32(0, 7, 1) }, "\"args\" has 7 parameters"},
		{"a negative parameter", s, func(r *rig.Run) { r.SetUint32(0, -1, 1) }, "\"args\" has 7 parameters"},
		{"a part past the last", s, func(r *rig.Run) { r.SetUint32(2, 0, 1) }, "the submission has 2 parts"},
		{"a negative part", s, func(r *rig.Run) { r.SetUint32(-1, 0, 1) }, "the submission has 2 parts"},
		{"a part that is no launch", s, func(r *rig.Run) { r.SetUint32(1, 0, 1) }, "the part is a copy, not a launch"},
		{"a function without a layout", u, func(r *rig.Run) { r.SetUint32(0, 0, 1) }, "states no layout"},
	} {
		r := c.s.Take()
		c.set(r)
		r.SetUint32(0, 2, 5) // a good setter after a bad one keeps the first error
		if _, err := r.Submit(context.Background(), out); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Submit returned %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

func TestKernelArgsNoAlloc(t *testing.T) {
	d := host(t, hostdev.Config{})
	s := sub(t, d, rig.Kernel(fn(t, d, "args"), rig.WriteArg(0, 0)))
	r := s.Take()
	defer r.Release()
	struct3 := []byte{1, 2, 3}
	if n := testing.AllocsPerRun(100, func() {
		r.SetBytes(0, 1, struct3[:1])
		r.SetInt32(0, 2, -7)
		r.SetFloat32(0, 3, 1.5)
		r.SetUint64(0, 4, 3)
		r.SetFloat64(0, 5, 2)
		r.SetBytes(0, 6, struct3)
	}); n != 0 {
		t.Fatalf("setting parameters allocates %v times", n)
	}
}

func TestKernelArgErrorsMatchErrInvalid(t *testing.T) {
	d := host(t, hostdev.Config{})
	out := alloc(t, d, device.PinnedMemory, 64)
	r := sub(t, d, rig.Kernel(fn(t, d, "args"), rig.WriteArg(0, 0))).Take()
	r.SetUint64(0, 2, 1)
	if _, err := r.Submit(context.Background(), out); !errors.Is(err, rig.ErrInvalid) {
		t.Fatalf("a parameter of the wrong size: %v, want an error matching ErrInvalid", err)
	}
	if _, err := rig.NewSubmission(d, rig.Kernel(fn(t, d, "args"), rig.ReadArg(0, 2))); !errors.Is(err, rig.ErrInvalid) {
		t.Fatalf("a ref to a 4-byte parameter: %v, want an error matching ErrInvalid", err)
	}
}
