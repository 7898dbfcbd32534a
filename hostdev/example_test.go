package hostdev_test

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	"golang.org/x/sys/unix"
)

// A program registers its kernels once, at init: a second Register of a
// name panics. iota stores each thread's index into the uint32 array whose
// address is parameter 0.
func init() {
	hostdev.RegisterParams("example.iota", 8, func(k *hostdev.Ctx) {
		i := k.Index()
		out := k.Bytes(k.Uint64(0)+4*uint64(i), 4)
		binary.LittleEndian.PutUint32(out, uint32(i))
	})
}

// This example drives a host device through the driver contract, as rig
// does: it loads an image that names it, maps the
// caller's pages for the device, launches the kernel over 4 groups of 8
// threads, and sleeps until the word shows the launch's value.
func Example() {
	var word uint64
	drv, err := hostdev.Open(hostdev.Config{MapsHost: true}).Make(&word)
	if err != nil {
		panic(err)
	}
	defer drv.Stop("")
	code, err := drv.Image(hostdev.ImageOf("example.iota"))
	if err != nil {
		panic(err)
	}
	iota, err := drv.Entry(code.Loaded, "example.iota")
	if err != nil {
		panic(err)
	}

	mem, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		panic(err)
	}
	defer unix.Munmap(mem)
	r, err := drv.MapHost(uintptr(unsafe.Pointer(&mem[0])), len(mem))
	if err != nil {
		panic(err)
	}
	defer drv.Free(r)

	params := binary.LittleEndian.AppendUint64(nil, drv.Locate(r).Address)
	s := &device.Submission{Value: 1, Parts: []device.Part{{
		Kind: device.Launch, Queue: device.Compute, Entry: iota,
		Groups: [3]uint32{4, 1, 1}, Threads: [3]uint32{8, 1, 1}, Params: params,
	}}}
	if a := drv.Room(s); a.Kind != device.RoomOK {
		panic(a.Reason)
	}
	drv.Submit(s)
	for seen := atomic.LoadUint64(&word); seen != 1; seen = atomic.LoadUint64(&word) {
		if err := drv.Sleep(seen, time.Second); err != nil {
			panic(err)
		}
	}
	fmt.Println(binary.LittleEndian.Uint32(mem[4*5:]), binary.LittleEndian.Uint32(mem[4*31:]))
	// Output: 5 31
}
