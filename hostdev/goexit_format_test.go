package hostdev

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// goexitFormat is a panic value whose String method ends the goroutine
// that formats it with runtime.Goexit, as a test's Stringer that calls
// t.FailNow does; it first closes formatting.
type goexitFormat struct{ formatting chan struct{} }

func (g goexitFormat) String() string {
	close(g.formatting)
	runtime.Goexit()
	return ""
}

// The goexit.format kernel's state: seq is the Ctx of the sequencer, which
// a launch of one group runs on; a launch of more groups panics with a
// goexitFormat on the first helper that runs one, and holds the
// sequencer's groups until the value is being formatted.
var goexitFormatState struct {
	seq        atomic.Pointer[Ctx]
	once       sync.Once
	formatting chan struct{}
}

func init() {
	RegisterParams("goexit.format", 0, func(k *Ctx) {
		s := &goexitFormatState
		switch {
		case k.Groups == [3]int{1, 1, 1}:
			s.seq.Store(k)
		case k == s.seq.Load():
			<-s.formatting
		default:
			panicked := false
			s.once.Do(func() { panicked = true })
			if panicked {
				panic(goexitFormat{s.formatting})
			}
		}
	})
}

// TestHelperGoexitInPanicFormat runs a kernel whose panic, on a helper,
// ends the helper's goroutine as the fault's cause is formatted: the
// device still faults, and the word does not show the value whose group
// did not run to its end.
func TestHelperGoexitInPanicFormat(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	goexitFormatState.formatting = make(chan struct{})
	goexitFormatState.once = sync.Once{}
	d, w := newDev(t, Config{}, 0)
	e := entry(t, d, "goexit.format")
	if err := reach(t, d, submit(t, d, one(e, nil))); err != nil {
		t.Fatal(err)
	}
	v := submit(t, d, launch(e, [3]uint32{2, 1, 1}, [3]uint32{1, 1, 1}, nil))
	<-goexitFormatState.formatting
	// The value ends either way: the sequencer's group returns once the
	// panic's value is being formatted.
	for {
		if f := d.fault.Load(); f != nil {
			break
		}
		if got := atomic.LoadUint64(w); got == v {
			t.Fatalf("the word shows value %d, one of whose groups panicked, and the device did not fault", v)
		}
		runtime.Gosched()
	}
	if err := d.Sleep(atomic.LoadUint64(w), 0); err == nil {
		t.Fatal("Sleep answered nil on a device whose kernel panicked")
	}
	if got := atomic.LoadUint64(w); got == v {
		t.Fatalf("the word shows value %d, one of whose groups panicked", v)
	}
}
