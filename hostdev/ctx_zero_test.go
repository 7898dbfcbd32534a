package hostdev

import (
	"strings"
	"testing"
)

// faultOf runs f and returns the cause of the Fault it ended with, or ""
// where it returned; another panic goes on.
func faultOf(f func()) (why string) {
	defer func() {
		if v := recover(); v != nil {
			fp, ok := v.(faultPanic)
			if !ok {
				panic(v)
			}
			why = fp.why
		}
	}()
	f()
	return ""
}

// TestCtxOutsideLaunch: a Ctx made outside a launch, as a test of a
// kernel makes one, has no device: Stopped is never closed, Bytes and
// Float32s fault as an address outside every region does, and the
// parameter reads work on its Params.
func TestCtxOutsideLaunch(t *testing.T) {
	k := &Ctx{Params: []byte{1, 0, 0, 0, 0, 0, 0, 0}, Groups: [3]int{1, 1, 1}, Threads: [3]int{4, 1, 1}}
	select {
	case <-k.Stopped():
		t.Error("Stopped is closed on a Ctx of no device")
	default:
	}
	for name, f := range map[string]func(){
		"Bytes":    func() { k.Bytes(0x1000, 8) },
		"Float32s": func() { k.Float32s(0x1000, 2) },
	} {
		if why := faultOf(f); !strings.Contains(why, "outside every region") {
			t.Errorf("%s on a Ctx of no device: fault %q, want one naming no region", name, why)
		}
	}
	if why := faultOf(func() { k.Uint64(4) }); !strings.Contains(why, "parameter bytes") {
		t.Errorf("Uint64 past Params: fault %q", why)
	}
	if v := k.Uint64(0); v != 1 {
		t.Errorf("Uint64(0) = %d, want 1", v)
	}
}
