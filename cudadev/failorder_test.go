//go:build linux && (amd64 || arm64)

package cudadev

import (
	"sync"
	"testing"

	"github.com/rig-go/rig/device"
)

// TestStartJoinRefused has CUDA refuse, with an error of the call alone,
// the order of a value's start stream after the stream the last value
// ended on: the value's work runs on the other stream. The failed value
// must still be written behind every earlier value's work, so on the
// stream the last value ended on, never on the start stream, which
// nothing orders after that work.
func TestStartJoinRefused(t *testing.T) {
	for _, refused := range []string{"cuEventRecord", "cuStreamWaitEvent"} {
		t.Run(refused, func(t *testing.T) {
			var mu sync.Mutex
			var writes []uintptr // the streams of the word's writes
			tab := fakeTable(t, map[string]fakeFn{
				refused: func([6]uintptr) result { return errInvalidValue },
				"cuStreamWriteValue64_v2": func(a [6]uintptr) result {
					mu.Lock()
					writes = append(writes, a[0])
					mu.Unlock()
					return 0
				},
			})
			d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
			d.end = device.Compute
			dst := &region{kind: devMem, size: 8}
			s := &device.Submission{Value: 1, Parts: []device.Part{
				{Kind: device.CopyRows, Queue: device.Copy, Dst: dst, Src: dst, RowBytes: 8, Rows: 1},
			}}
			if a := d.Submit(s); a.Kind != device.Failed {
				t.Fatalf("the submit answered %v", a.Kind)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(writes) != 1 || writes[0] != d.streams[device.Compute] || d.end != device.Compute || d.written != 1 {
				t.Fatalf("value 1 was written on streams %#x, ending on stream %d, written %d; want once on %#x (COMPUTE:0, where value 0 ended), written 1", writes, d.end, d.written, d.streams[device.Compute])
			}
		})
	}
}
