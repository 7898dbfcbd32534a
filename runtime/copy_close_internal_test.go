package rig

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// TestCopyAsReapMarksFreed: an Upload or Download that found the buffer's
// device open, and then finds the buffer marked freed by that device's
// reaping (its close came in between), returns an error matching
// ErrClosed, as its documentation says of a buffer whose device closed,
// not ErrFreed: the buffer was never freed. The copy waits for the
// buffer's lock, which the test holds, from after its look at the close
// until the reaping's mark.
func TestCopyAsReapMarksFreed(t *testing.T) {
	for _, c := range []struct {
		name string
		copy func(b *Buffer) error
	}{
		{"upload", func(b *Buffer) error { return Upload(context.Background(), b, 0, []byte{1, 2}) }},
		{"download", func(b *Buffer) error { return Download(context.Background(), make([]byte, 2), b, 0) }},
		{"empty upload", func(b *Buffer) error { return Upload(context.Background(), b, 0, []byte{}) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake()
			d := openFake(t, "copy-reap-"+strings.ReplaceAll(c.name, " ", "-"), f)
			b, err := d.Alloc(device.DeviceMemory, 64)
			if err != nil {
				t.Fatal(err)
			}
			b.s.mu.Lock()
			res := make(chan error, 1)
			go func() { res <- c.copy(b) }()
			// The copy looked at the close, and waits for the lock.
			for !blockedIn("runtime.(*bufState).usable", "runtime.(*Buffer).waitUses") {
				time.Sleep(50 * time.Microsecond)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			// The reaping's mark (awaitOtherUses), which waits for the
			// lock too.
			b.s.freed = true
			b.s.mu.Unlock()
			if err := <-res; !errors.Is(err, ErrClosed) {
				t.Fatalf("a copy of a buffer whose device closed: %v, want an error matching ErrClosed", err)
			}
			<-d.Done()
		})
	}
}

// blockedIn reports whether a goroutine waits for a mutex inside one of
// the frames, as runtime.Stack names them.
func blockedIn(frames ...string) bool {
	buf := make([]byte, 1<<20)
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if !strings.Contains(g, "sync.(*Mutex).Lock") {
			continue
		}
		for _, f := range frames {
			if strings.Contains(g, f) {
				return true
			}
		}
	}
	return false
}
