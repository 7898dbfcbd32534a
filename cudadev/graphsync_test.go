//go:build linux && (amd64 || arm64)

package cudadev

import (
	"bytes"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/rig-go/rig/cudadev/cuda"
	"github.com/rig-go/rig/device"
)

// TestExecLaunchSerialized submits a fill part of an executable graph while
// another goroutine sets one of its kernel nodes: CUDA's graph objects are
// not safe to use from two threads at once, so the launch must wait for
// the set to return.
func TestExecLaunchSerialized(t *testing.T) {
	var inSet, overlap atomic.Bool
	entered, release := make(chan struct{}), make(chan struct{})
	tab := fakeTable(t, graphFakes(map[string]fakeFn{
		"cuFuncGetAttribute": fakeFuncAttrs(1024, 48<<10),
		"cuFuncGetParamInfo": func([6]uintptr) result { return errInvalidValue },
		"cuGraphExecKernelNodeSetParams_v2": func([6]uintptr) result {
			inSet.Store(true)
			close(entered)
			<-release
			inSet.Store(false)
			return 0
		},
		"cuGraphLaunch": func([6]uintptr) result {
			if inSet.Load() {
				overlap.Store(true)
			}
			return 0
		},
	}))
	d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
	const fn = 0xf3
	fakeModule(t, d, fn)
	gs := &graphs{d: d}
	g, err := gs.NewGraph()
	if err != nil {
		t.Fatal(err)
	}
	k := cuda.Kernel{Func: fn, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}
	node, err := g.Kernel(k)
	if err != nil {
		t.Fatal(err)
	}
	x, err := g.Instantiate()
	if err != nil {
		t.Fatal(err)
	}

	setDone := make(chan error, 1)
	go func() { setDone <- x.SetKernel(node, k) }()
	<-entered
	subDone := make(chan device.SubmitAnswer, 1)
	s := &device.Submission{Value: 1, Parts: []device.Part{{Kind: device.Fill, Queue: device.Compute, FillFn: x}}}
	go func() { subDone <- d.Submit(s) }()

	// Wait until the submit has returned or waits for the graph.
	var a device.SubmitAnswer
	returned := false
	buf := make([]byte, 1<<20)
	for !returned {
		select {
		case a = <-subDone:
			returned = true
			continue
		default:
		}
		if submitWaitsForGraph(buf) {
			break
		}
		runtime.Gosched()
	}
	close(release)
	if err := <-setDone; err != nil {
		t.Fatal(err)
	}
	if !returned {
		a = <-subDone
	}
	if a.Kind == device.Failed {
		t.Fatalf("the submit failed: %s", a.Reason)
	}
	if overlap.Load() {
		t.Fatal("the submit launched the executable graph while CUDA was setting one of its nodes on another thread")
	}
	if err := x.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
}

// submitWaitsForGraph reports whether a submit waits for an executable
// graph's lock.
func submitWaitsForGraph(buf []byte) bool {
	n := runtime.Stack(buf, true)
	for _, g := range bytes.Split(buf[:n], []byte("\n\n")) {
		if bytes.Contains(g, []byte("(*gpu).Submit")) && bytes.Contains(g, []byte("(*execGraph).")) && bytes.Contains(g, []byte("sync.(*Mutex).Lock")) {
			return true
		}
	}
	return false
}
