// Package timeline holds rig's array of timeline words: page-aligned host
// memory outside Go's heap, one 8-byte word per open device.
//
// Drivers map the array for their devices' work (cudadev registers it with
// libcuda, nvdev maps it through the RM), so that one device's work can
// wait on another device's word. A slot's word keeps its value when the
// slot passes from one device to the next: a device's values start after
// the value its word holds when it opens.
//
// Any goroutine may call any function here.
package timeline

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Bytes is the size of the array: 64 KiB, the span a driver maps.
const Bytes = 64 << 10

// Len is the number of words in the array.
const Len = Bytes / 8

// ErrFull is returned by Take when every word is in use.
var ErrFull = errors.New("timeline: every word of rig's array is in use")

var (
	once  sync.Once
	mem   []byte
	words []uint64
	err0  error
	mu    sync.Mutex
	used  [Len]bool
	// start is the array's address once mapped, 0 before: Contains reads
	// it without the once, so that it neither maps the array nor races
	// with the first Array or Take.
	start atomic.Uintptr
)

func load() {
	mem, err0 = mapArray()
	if err0 != nil {
		return
	}
	words = unsafe.Slice((*uint64)(unsafe.Pointer(&mem[0])), Len)
	start.Store(uintptr(unsafe.Pointer(&words[0])))
}

// Array returns the array's memory: its host address and size. It maps the
// array at the first call.
func Array() (base uintptr, n int, err error) {
	once.Do(load)
	if err0 != nil {
		return 0, 0, err0
	}
	return uintptr(unsafe.Pointer(&mem[0])), Bytes, nil
}

// Take reserves a word and returns its slot and address.
func Take() (int, *uint64, error) {
	once.Do(load)
	if err0 != nil {
		return 0, nil, err0
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range used {
		if !used[i] {
			used[i] = true
			return i, &words[i], nil
		}
	}
	return 0, nil, ErrFull
}

// Give returns slot i, which Take returned, to the array. Its word keeps
// its value. It panics, naming i, where i is no slot or a slot not taken
// (given back twice): the slot may be another device's since, and a Take
// would hand its word to a second device.
func Give(i int) {
	if i < 0 || i >= Len {
		panic(fmt.Sprintf("timeline: Give of slot %d, not one of the array's %d", i, Len))
	}
	mu.Lock()
	held := used[i]
	used[i] = false
	mu.Unlock()
	if !held {
		panic(fmt.Sprintf("timeline: Give of slot %d, which is not taken", i))
	}
}

// Contains reports whether w is a word of the array.
func Contains(w *uint64) bool {
	b := start.Load()
	if w == nil || b == 0 {
		return false
	}
	p := uintptr(unsafe.Pointer(w))
	return p >= b && p-b < Bytes && (p-b)%8 == 0
}

// Load reads the word at w with acquire order.
func Load(w *uint64) uint64 { return atomic.LoadUint64(w) }

// Store writes v into the word at w with release order.
func Store(w *uint64, v uint64) { atomic.StoreUint64(w, v) }
