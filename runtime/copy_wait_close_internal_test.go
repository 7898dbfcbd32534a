package rig

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// TestCopyWaitWokenByClose: an Upload or Download of a buffer of b that
// waits for work of a that uses the buffer returns b's error once b is
// closed or lost meanwhile, since the copy can then only fail, rather
// than wait on for a's point.
func TestCopyWaitWokenByClose(t *testing.T) {
	for _, how := range []string{"close", "loss"} {
		for _, dir := range []string{"upload", "download"} {
			t.Run(how+"/"+dir, func(t *testing.T) {
				fa, fb := newFake(), newFake()
				fa.held, fa.peer = true, true
				a := openFake(t, "copywait-a-"+how+"-"+dir, fa)
				b := openFake(t, "copywait-b-"+how+"-"+dir, fb)
				x, err := b.Alloc(device.DeviceMemory, 64)
				if err != nil {
					t.Fatal(err)
				}
				pa := submit(t, launchOn(t, a, Write(0, 0)), x)
				t.Cleanup(func() { fa.complete(pa.v) })
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				errc := make(chan error, 1)
				go func() {
					if dir == "upload" {
						errc <- Upload(ctx, x, 0, []byte{1, 2, 3, 4})
					} else {
						errc <- Download(ctx, make([]byte, 4), x, 0)
					}
				}()
				select {
				case err := <-errc:
					t.Fatalf("the %s returned before a's write was reached: %v", dir, err)
				case <-time.After(30 * time.Millisecond):
				}
				want := endDevice(t, b, how)
				select {
				case err := <-errc:
					if !errors.Is(err, want) || !strings.Contains(err.Error(), b.name) {
						t.Fatalf("the %s after b's %s: %v, want an error matching %v that names %s", dir, how, err, want, b.name)
					}
				case <-time.After(2 * time.Second):
					fa.complete(pa.v)
					err := <-errc
					t.Fatalf("the %s of b's buffer, waiting for a's point, was not woken by b's %s within 2s; it returned %v once a's point was reached", dir, how, err)
				}
			})
		}
	}
}
