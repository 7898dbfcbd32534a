package hostdev

import (
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
)

func TestSmoke(t *testing.T) {
	var word uint64
	drv, err := Default().Make(&word)
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Stop("")
	code, err := drv.Image(ImageOf("twice"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := drv.Entry(code.Loaded, "twice")
	if err != nil {
		t.Fatal(err)
	}
	r, err := drv.Alloc(device.Mapped, 4096)
	if err != nil {
		t.Fatal(err)
	}
	l := drv.Locate(r)
	m := r.(*region).mem
	x := unsafe.Slice((*float32)(unsafe.Pointer(&m[0])), 1024)
	for i := range x {
		x[i] = float32(i)
	}
	params := make([]byte, 8)
	binary.LittleEndian.PutUint64(params, l.Address)
	s := &device.Submission{Value: 1, Parts: []device.Part{{Kind: device.Launch, Entry: e, Groups: [3]uint32{4, 1, 1}, Threads: [3]uint32{256, 1, 1}, Params: params}}}
	if a := drv.Room(s); a.Kind != device.RoomOK {
		t.Fatal(a)
	}
	if a := drv.Submit(s); a.Kind != device.Committed {
		t.Fatal(a)
	}
	for atomic.LoadUint64(&word) != 1 {
		drv.Sleep(0, time.Second)
	}
	for i := range x {
		if x[i] != 2*float32(i) {
			t.Fatalf("x[%d] = %v", i, x[i])
		}
	}
}
