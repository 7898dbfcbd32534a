package rig_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// The hostile-input suite: tables of bad calls per API function on the
// host driver. Each is returned by an error that matches its documented
// sentinel and names the problem, or by a documented panic where the
// standard library panics too (a nil context), and the device keeps
// working after every one.

// hostile is one bad call: its error must match want and contain says.
type hostile struct {
	name string
	call func() error
	want error
	says string
}

// runHostile runs each call on d, then checks that d still runs work.
func runHostile(t *testing.T, d *rig.Device, cases []hostile) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("panicked: %v", p)
					}
				}()
				err = c.call()
			}()
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want one matching %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Fatalf("error %q does not say %q", err, c.says)
			}
			if d.Err() != nil {
				t.Fatalf("the bad call lost the device: %v", d.Err())
			}
		})
	}
	stillWorks(t, d)
}

// stillWorks runs a copy on d and checks its bytes.
func stillWorks(t *testing.T, d *rig.Device) {
	t.Helper()
	a := alloc(t, d, device.PinnedMemory, 64)
	b := alloc(t, d, device.PinnedMemory, 64)
	for i := range a.Bytes() {
		a.Bytes()[i] = byte(i)
	}
	wait(t, submit(t, sub(t, d, rig.Copy(0, 0, 1, 0, 64)), a, b))
	for i, c := range b.Bytes() {
		if c != byte(i) {
			t.Fatalf("the device no longer copies: byte %d is %d", i, c)
		}
	}
}

// newSub is a call of NewSubmission on d.
func newSub(d *rig.Device, parts ...rig.Part) func() error {
	return func() error {
		_, err := rig.NewSubmission(d, parts...)
		return err
	}
}

func TestHostileNewSubmission(t *testing.T) {
	d := host(t, hostdev.Config{})
	other := host(t, hostdev.Config{})
	twice := fn(t, d, "twice")
	empty := fn(t, d, "empty")
	runHostile(t, d, []hostile{
		{"nil device", newSub(nil, rig.Launch(twice, 8)), rig.ErrInvalid, "nil device"},
		{"no function", newSub(d, rig.Launch(nil, 0)), rig.ErrInvalid, "no function"},
		{"zero function", newSub(d, rig.Launch(&rig.Function{}, 0)), rig.ErrInvalid, "zero Function"},
		{"function of another device", newSub(d, rig.Launch(fn(t, other, "twice"), 8)), rig.ErrInvalid, "function of device"},
		{"negative params", newSub(d, rig.Launch(empty, -1)), rig.ErrInvalid, "-1 parameter bytes"},
		{"params 1<<20", newSub(d, rig.Launch(empty, 1<<20)), rig.ErrInvalid, "parameter bytes"},
		{"params 1<<40", newSub(d, rig.Launch(empty, 1<<40)), rig.ErrInvalid, "parameter bytes"},
		{"params 1<<62", newSub(d, rig.Launch(empty, 1<<62)), rig.ErrInvalid, "parameter bytes"},
		{"params past MaxParams", newSub(d, rig.Launch(empty, rig.MaxParams+1)), rig.ErrInvalid, "parameter bytes"},
		{"params past the function's", newSub(d, rig.Launch(twice, 16)), rig.ErrInvalid, "reads 8"},
		{"buffer 1<<40", newSub(d, rig.Launch(empty, 0, rig.Uses(1<<40, rig.Reads))), rig.ErrInvalid, "buffer 1099511627776"},
		{"buffer MaxBuffers", newSub(d, rig.Launch(empty, 0, rig.Uses(rig.MaxBuffers, rig.Reads))), rig.ErrInvalid, "outside 0 to"},
		{"buffer MaxInt", newSub(d, rig.Launch(twice, 8, rig.Write(math.MaxInt, 0))), rig.ErrInvalid, "buffer"},
		{"negative buffer", newSub(d, rig.Launch(twice, 8, rig.Write(-1, 0))), rig.ErrInvalid, "buffer -1"},
		{"ref at MaxInt-3", newSub(d, rig.Launch(twice, 8, rig.Write(0, math.MaxInt-3))), rig.ErrInvalid, "outside the 8 bytes of parameters"},
		{"ref past the parameters", newSub(d, rig.Launch(twice, 8, rig.Write(0, 4))), rig.ErrInvalid, "outside the 8 bytes"},
		{"ref at -2", newSub(d, rig.Launch(twice, 8, rig.Ref{Buf: 0, At: -2, Access: rig.Reads})), rig.ErrInvalid, "at byte -2"},
		{"ref of no access", newSub(d, rig.Launch(twice, 8, rig.Ref{Buf: 0, At: 0})), rig.ErrInvalid, "no access"},
		{"ref of a bad access", newSub(d, rig.Launch(twice, 8, rig.Ref{Buf: 0, At: 0, Access: 4})), rig.ErrInvalid, "no access"},
		{"address ref on a copy", newSub(d, rig.Fill(hostdev.FillFunc(func(uintptr) {}), 0, rig.Write(0, 0))), rig.ErrInvalid, "parameters"},
		{"after a missing part", newSub(d, rig.Launch(twice, 8).After(3)), rig.ErrInvalid, "runs after part 3"},
		{"after -2", newSub(d, rig.Launch(twice, 8).After(-2)), rig.ErrInvalid, "runs after part"},
		{"after -1", newSub(d, rig.Launch(twice, 8), rig.Launch(twice, 8).After(-1)), rig.ErrInvalid, "part 1: it runs after part -1"},
		{"after MaxInt", newSub(d, rig.Launch(twice, 8).After(math.MaxInt)), rig.ErrInvalid, "runs after part 9223372036854775807"},
		{"zero part", newSub(d, rig.Part{}), rig.ErrInvalid, "not a part"},
		{"copy source past 2^64", newSub(d, rig.Copy(0, math.MaxUint64-99, 1, 0, 200)), rig.ErrInvalid, "past 2^64"},
		{"copy destination past 2^64", newSub(d, rig.Copy(0, 0, 1, math.MaxUint64, 2)), rig.ErrInvalid, "past 2^64"},
		{"rows past 2^64", newSub(d, rig.CopyRows(rig.Rows{Src: 0, Dst: 1, RowBytes: 8, Rows: 1 << 62, SrcPitch: 16})), rig.ErrInvalid, "past 2^64"},
		{"copy of 2^64-100 bytes", newSub(d, rig.Copy(0, 100, 1, 0, math.MaxUint64-99)), rig.ErrInvalid, "past 2^64"},
		{"fill past 2^64", newSub(d, rig.FillBytes(0, math.MaxUint64, 2, 1)), rig.ErrInvalid, "past 2^64"},
		{"ref offsets that add to 2^64", newSub(d, rig.Launch(twice, 8, rig.ReadWrite(0, 0).Plus(1<<63).Plus(1<<63))), rig.ErrInvalid, "past 2^64"},
		{"ref offsets that wrap to 8", newSub(d, rig.Launch(twice, 8, rig.ReadWrite(0, 0).Plus(16).Plus(math.MaxUint64-7))), rig.ErrInvalid, "buffer 0 whose offsets add past 2^64"},
		{"use offsets past 2^64", newSub(d, rig.Launch(empty, 0, rig.Uses(2, rig.Reads).Plus(math.MaxUint64).Plus(1).Plus(4))), rig.ErrInvalid, "buffer 2"},
		{"ref by parameter offsets past 2^64", newSub(d, rig.Kernel(twice, rig.WriteArg(0, 0).Plus(math.MaxUint64).Plus(2))), rig.ErrInvalid, "past 2^64"},
	})
}

// runCall is a Submit of a run of s, set by set, with bufs.
func runCall(s *rig.Submission, set func(r *rig.Run), bufs ...*rig.Buffer) func() error {
	return func() error {
		r := s.Take()
		if set != nil {
			set(r)
		}
		p, err := r.Submit(context.Background(), bufs...)
		if err == nil {
			err = p.Wait(context.Background())
		}
		return err
	}
}

func TestHostileRun(t *testing.T) {
	d := host(t, hostdev.Config{MapsHost: true})
	twice := fn(t, d, "twice")
	one := sub(t, d, rig.Launch(twice, 8, rig.ReadWrite(0, 0)))
	x := alloc(t, d, device.PinnedMemory, 4*64)
	y := alloc(t, d, device.PinnedMemory, 4*64)
	// A MapHost buffer of 100 bytes inside a larger array: the pages
	// mapped hold more than the buffer.
	backing := make([]byte, 8192)
	h, err := d.MapHost(backing[1000:1100])
	if err != nil {
		t.Fatal(err)
	}
	freed := alloc(t, d, device.PinnedMemory, 64)
	if err := freed.Free(); err != nil {
		t.Fatal(err)
	}
	runHostile(t, d, []hostile{
		{"groups of part 5", runCall(one, func(r *rig.Run) { r.Groups(5, 1, 1, 1) }, x), rig.ErrInvalid, "part 5"},
		{"groups of part -1", runCall(one, func(r *rig.Run) { r.Groups(-1, 1, 1, 1) }, x), rig.ErrInvalid, "part -1"},
		{"threads of part 1", runCall(one, func(r *rig.Run) { r.Threads(1, 1, 1, 1) }, x), rig.ErrInvalid, "part 1"},
		{"shared of part 9", runCall(one, func(r *rig.Run) { r.Shared(9, 0) }, x), rig.ErrInvalid, "part 9"},
		{"params of part 7", runCall(one, func(r *rig.Run) {
			if p := r.Params(7); p != nil {
				t.Errorf("Params(7) = %v, want nil", p)
			}
		}, x), rig.ErrInvalid, "part 7"},
		{"negative groups", runCall(one, func(r *rig.Run) { r.Groups(0, -1, 1, 1) }, x), rig.ErrInvalid, "-1 groups"},
		{"groups past 2^32", runCall(one, func(r *rig.Run) { r.Groups(0, 1, 1<<33, 1) }, x), rig.ErrInvalid, "groups along axis 1"},
		{"negative threads", runCall(one, func(r *rig.Run) { r.Threads(0, 1, 1, -5) }, x), rig.ErrInvalid, "-5 threads"},
		{"negative shared", runCall(one, func(r *rig.Run) { r.Shared(0, -1) }, x), rig.ErrInvalid, "-1 bytes of dynamic shared memory"},
		{"shared past 2^32", runCall(one, func(r *rig.Run) { r.Shared(0, 1<<40) }, x), rig.ErrInvalid, "dynamic shared memory"},
		{"zero groups", runCall(one, func(r *rig.Run) { r.Groups(0, 0, 1, 1) }, x), rig.ErrRefused, "0"},
		{"too much shared memory", runCall(one, func(r *rig.Run) { r.Shared(0, 1<<30) }, x), rig.ErrRefused, "shared"},
		{"no buffers", runCall(one, nil), rig.ErrInvalid, "uses 1 buffers, and 0 were given"},
		{"nil buffer", runCall(one, nil, nil), rig.ErrInvalid, "buffer 0 is nil"},
		{"zero buffer", runCall(one, nil, &rig.Buffer{}), rig.ErrInvalid, "buffer 0 is nil"},
		{"freed buffer", runCall(one, nil, freed), rig.ErrFreed, "used after free"},
		{"queue 5", runCall(sub(t, d, rig.Launch(twice, 8, rig.ReadWrite(0, 0)).On(5)), nil, x), rig.ErrRefused, "queue 5"},
		{"queue -1", runCall(sub(t, d, rig.Copy(0, 0, 1, 0, 8).On(-1)), nil, x, y), rig.ErrRefused, "queue -1"},
		{"launch on COPY:0", runCall(sub(t, d, rig.Launch(twice, 8, rig.ReadWrite(0, 0)).On(device.Copy)), nil, x), rig.ErrRefused, "COPY:0"},
		{"words", runCall(sub(t, d, rig.Words([]uint32{1, 2})), nil), rig.ErrRefused, "words"},
		{"fill of a wrong function", runCall(sub(t, d, rig.Fill(func() {}, 0)), nil), rig.ErrRefused, "FillFunc"},
		{"ref offset past the buffer", runCall(sub(t, d, rig.Launch(twice, 8, rig.ReadWrite(0, 0).Plus(257))), nil, x), rig.ErrRefused, "adds 257 bytes"},
		{"ref offset 2^64-1", runCall(sub(t, d, rig.Launch(twice, 8, rig.ReadWrite(0, 0).Plus(math.MaxUint64))), nil, x), rig.ErrRefused, "to the address of a buffer of 256"},
		{"copy past the source", runCall(sub(t, d, rig.Copy(0, 200, 1, 0, 57)), nil, x, y), rig.ErrRefused, "reads from byte 200 up to byte 257 of buffer 0"},
		{"copy past the destination", runCall(sub(t, d, rig.Copy(0, 0, 1, 1, 256)), nil, x, y), rig.ErrRefused, "writes from byte 1 up to byte 257 of buffer 1"},
		{"empty copy from past the source", runCall(sub(t, d, rig.Copy(0, 1<<40, 1, 0, 0)), nil, x, y), rig.ErrRefused, "reads from byte 1099511627776 up to byte 1099511627776 of buffer 0, which holds 256"},
		{"empty copy to past the destination", runCall(sub(t, d, rig.Copy(0, 0, 1, 257, 0)), nil, x, y), rig.ErrRefused, "writes from byte 257 up to byte 257 of buffer 1"},
		{"rows past the destination", runCall(sub(t, d, rig.CopyRows(rig.Rows{Src: 0, Dst: 1, RowBytes: 8, Rows: 4, DstPitch: 84})), nil, x, y), rig.ErrRefused, "up to byte 260"},
		{"fill past a MapHost buffer", runCall(sub(t, d, rig.FillBytes(0, 0, 101, 7)), nil, h), rig.ErrRefused, "which holds 100"},
		{"fill at the end of a MapHost buffer", runCall(sub(t, d, rig.FillBytes(0, 99, 2, 7)), nil, h), rig.ErrRefused, "which holds 100"},
		{"copy into a MapHost buffer past its end", runCall(sub(t, d, rig.Copy(0, 0, 1, 0, 101)), nil, x, h), rig.ErrRefused, "which holds 100"},
		{"copy out of a MapHost buffer past its end", runCall(sub(t, d, rig.Copy(1, 50, 0, 0, 51)), nil, x, h), rig.ErrRefused, "which holds 100"},
	})
	// Nothing around the MapHost buffer was written.
	for i, c := range backing {
		if c != 0 {
			t.Fatalf("byte %d of the array around a MapHost buffer is %d", i, c)
		}
	}
}

// TestHostileSubmitTwice: a second Submit of a run, or a Submit after its
// Release, is an error, and the run's next holder is not disturbed.
func TestHostileSubmitTwice(t *testing.T) {
	d := host(t, hostdev.Config{})
	x := alloc(t, d, device.PinnedMemory, 4*64)
	s := sub(t, d, rig.Launch(fn(t, d, "twice"), 8, rig.ReadWrite(0, 0)))
	r := s.Take()
	p, err := r.Submit(context.Background(), x)
	if err != nil {
		t.Fatal(err)
	}
	wait(t, p)
	last := d.Last()
	runHostile(t, d, []hostile{
		{"submit twice", func() error { _, err := r.Submit(context.Background(), x); return err }, rig.ErrInvalid, "went back to its pool"},
		{"submit after release", func() error {
			r := s.Take()
			r.Release()
			r.Release() // a second Release does nothing
			_, err := r.Submit(context.Background(), x)
			return err
		}, rig.ErrInvalid, "went back to its pool"},
	})
	if d.Last().Value() != last.Value()+1 { // stillWorks submitted one
		t.Fatalf("a refused Submit took a value: last %d, was %d", d.Last().Value(), last.Value())
	}
	// The pool hands each run out once: two Takes after the double
	// Release are two runs.
	a, b := s.Take(), s.Take()
	if a == b {
		t.Fatal("a run released twice was handed out twice")
	}
	a.Release()
	b.Release()
}

func TestHostileAlloc(t *testing.T) {
	d := host(t, hostdev.Config{})
	noMap := host(t, hostdev.Config{})
	m := host(t, hostdev.Config{MapsHost: true})
	call := func(kind device.Memory, n int) func() error {
		return func() error { _, err := d.Alloc(kind, n); return err }
	}
	mapHost := func(d *rig.Device, b []byte) func() error {
		return func() error { _, err := d.MapHost(b); return err }
	}
	runHostile(t, d, []hostile{
		{"zero bytes", call(device.PinnedMemory, 0), rig.ErrInvalid, "at least one byte"},
		{"negative bytes", call(device.DeviceMemory, -1), rig.ErrInvalid, "at least one byte"},
		{"MinInt bytes", call(device.PinnedMemory, math.MinInt), rig.ErrInvalid, "at least one byte"},
		{"no kind of memory", call(device.Memory(99), 8), rig.ErrInvalid, "99 is no kind of memory"},
		{"map nil", mapHost(m, nil), rig.ErrInvalid, "at least one byte"},
		{"map empty", mapHost(m, make([]byte, 0, 10)), rig.ErrInvalid, "at least one byte"},
		{"map on a device that maps no host memory", mapHost(noMap, make([]byte, 10)), device.ErrNever, "map"},
	})
}

func TestHostileImage(t *testing.T) {
	d := host(t, hostdev.Config{})
	img, err := d.LoadImage(hostdev.ImageOf("twice"))
	if err != nil {
		t.Fatal(err)
	}
	gone, err := d.LoadImage(hostdev.ImageOf("empty"))
	if err != nil {
		t.Fatal(err)
	}
	if err := gone.Unload(); err != nil {
		t.Fatal(err)
	}
	resolve := func(im *rig.Image, name string) func() error {
		return func() error { _, err := im.Resolve(name); return err }
	}
	runHostile(t, d, []hostile{
		{"no such function", resolve(img, "thrice"), rig.ErrNoFunction, "thrice"},
		{"empty name", resolve(img, ""), rig.ErrNoFunction, "no such function"},
		{"a name with a NUL", resolve(img, "twice\x00"), rig.ErrNoFunction, "no such function"},
		{"resolve after unload", resolve(gone, "empty"), rig.ErrFreed, "used after free"},
	})
	// A binary that is no image is refused, naming the image.
	for _, bin := range [][]byte{nil, {}, []byte("not an image"), make([]byte, 1<<16)} {
		if _, err := d.LoadImage(bin); err == nil || !strings.Contains(err.Error(), "image") {
			t.Fatalf("LoadImage of %d bytes that are no image: %v", len(bin), err)
		}
	}
	stillWorks(t, d)
}

// TestHostileWait: a nil context panics, as it does in the standard
// library; a cancelled or expired context is returned as such.
func TestHostileWait(t *testing.T) {
	d := host(t, hostdev.Config{})
	s := sub(t, d, rig.Launch(fn(t, d, "sleep"), 8))
	p, err := sleepRun(s, 100*time.Millisecond).Submit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var none context.Context
	mustPanic(t, "Wait(nil)", func() { _ = p.Wait(none) })
	mustPanic(t, "Submit(nil)", func() { _, _ = s.Take().Submit(none) })
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel2()
	<-expired.Done()
	runHostile(t, d, []hostile{
		{"cancelled", func() error { return p.Wait(cancelled) }, context.Canceled, "canceled"},
		{"expired", func() error { return p.Wait(expired) }, context.DeadlineExceeded, "deadline"},
		{"submit with a cancelled context", func() error { _, err := s.Take().Submit(cancelled); return err }, context.Canceled, "canceled"},
	})
	wait(t, p)
	if d.Err() != nil {
		t.Fatal(d.Err())
	}
	// Whatever else the call would answer: a reached point, the zero
	// Point, a run whose own arguments are wrong.
	mustPanic(t, "Wait(nil) on a reached point", func() { _ = p.Wait(none) })
	mustPanic(t, "Wait(nil) on the zero Point", func() { _ = rig.Point{}.Wait(none) })
	bad := s.Take()
	bad.Groups(7, 1, 1, 1)
	mustPanic(t, "Submit(nil) of a run with an error", func() { _, _ = bad.Submit(none) })
	bad = s.Take()
	bad.Groups(7, 1, 1, 1)
	mustPanic(t, "Do(nil) of a run with an error", func() { _, _ = bad.Do(none) })
}

func mustPanic(t *testing.T, name string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s did not panic", name)
		}
	}()
	f()
}
