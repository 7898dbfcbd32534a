package nvdev

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// TestPathFaultGroup makes the path fail a call of a timeline of the
// shared group, then opens another timeline of the GPU while the first is
// still open. A fault the path returns to Grow, Alloc, Entry, MapPeer,
// MapHost or a lay loses the timeline and, with it, the group's fault
// domain: the group is marked faulted, and the new timeline gets a group
// and a fault domain of its own. A refusal that leaves the device working
// (no memory, a mapping the path never makes, a bad argument) leaves the
// group shared, and the new timeline joins it.
func TestPathFaultGroup(t *testing.T) {
	for _, c := range []struct {
		name  string
		fault bool
		run   func(r *raw) error
	}{
		{"Grow, a fault", true, func(r *raw) error {
			return under(r.f, func(on bool) { r.f.mappedFault = onFor(on) }, func() error {
				r.d.need = need{seg: [2]uint64{qCompute: 1 << 14}}
				return r.d.Grow()
			})
		}},
		{"Grow, no memory", false, func(r *raw) error {
			return under(r.f, func(on bool) { r.f.noMemory = on }, func() error {
				r.d.need = need{seg: [2]uint64{qCompute: 1 << 14}}
				err := r.d.Grow()
				if sh := (*device.Short)(nil); !errors.As(err, &sh) {
					r.t.Errorf("grow with no memory: %v, want a Short", err)
				}
				return err
			})
		}},
		{"Alloc, a fault", true, func(r *raw) error {
			return under(r.f, func(on bool) { r.f.mappedFault = onFor(on) }, func() error {
				_, err := r.d.Alloc(device.MappedMemory, 4096)
				return err
			})
		}},
		{"Alloc, no memory", false, func(r *raw) error {
			return under(r.f, func(on bool) { r.f.noMemory = on }, func() error {
				_, err := r.d.Alloc(device.DeviceMemory, 4096)
				if !errors.Is(err, device.ErrNoMemory) {
					r.t.Errorf("alloc with no memory: %v, want ErrNoMemory", err)
				}
				return err
			})
		}},
		{"Alloc of no bytes", false, func(r *raw) error {
			_, err := r.d.Alloc(device.DeviceMemory, 0)
			return err
		}},
		{"Entry, a fault", true, func(r *raw) error {
			img := layOwnImage(r)
			return under(r.f, func(on bool) { r.f.deviceFault = onFor(on) }, func() error {
				_, err := r.d.Entry(img, "local_mem")
				return err
			})
		}},
		{"Entry, no memory", false, func(r *raw) error {
			img := layOwnImage(r)
			return under(r.f, func(on bool) { r.f.noMemory = on }, func() error {
				_, err := r.d.Entry(img, "local_mem")
				if nm := (*device.NoMemory)(nil); !errors.As(err, &nm) {
					r.t.Errorf("entry with no memory: %v, want a NoMemory", err)
				}
				return err
			})
		}},
		{"Entry of no such function", false, func(r *raw) error {
			_, err := r.d.Entry(layOwnImage(r), "no_such_function")
			return err
		}},
		{"MapPeer, a fault", true, func(r *raw) error {
			o, m := peerOf(r)
			return under(r.f, func(on bool) { r.f.peerFault = on }, func() error {
				_, err := r.d.MapPeer(o.d, m)
				return err
			})
		}},
		{"MapPeer, refused", false, func(r *raw) error {
			o, m := peerOf(r)
			_, err := r.d.MapPeer(o.d, m)
			if !errors.Is(err, device.ErrNever) {
				r.t.Errorf("map_peer the path refuses: %v, want ErrNever", err)
			}
			return err
		}},
		{"MapHost, a fault", true, func(r *raw) error {
			b := make([]byte, 4096)
			return under(r.f, func(on bool) { r.f.hostFault = on }, func() error {
				_, err := r.d.MapHost(uintptr(unsafe.Pointer(&b[0])), len(b))
				return err
			})
		}},
		{"MapHost of no bytes", false, func(r *raw) error {
			b := make([]byte, 1)
			_, err := r.d.MapHost(uintptr(unsafe.Pointer(&b[0])), 0)
			return err
		}},
		{"lay, a fault", true, func(r *raw) error {
			code, err := r.d.Image(cubin(r.t))
			if err != nil {
				r.t.Fatal(err)
			}
			return under(r.f, func(on bool) { r.f.mappedFault = onFor(on) }, func() error {
				img, err := code.Lay(nil)
				if err == nil {
					r.imgs = append(r.imgs, img)
				}
				return err
			})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake()
			a := rawOn(t, f, Config{SharedGroup: true})
			defer a.close()
			if a.d.grp == nil {
				t.Fatal("a timeline of the shared group has no group")
			}
			err := c.run(a)
			if err == nil {
				t.Fatal("the call returned no error")
			}
			if _, fault := device.AsFault(err); fault != c.fault {
				t.Fatalf("the call returned %v, a fault %v, want %v", err, fault, c.fault)
			}
			groups.mu.Lock()
			faulted := a.d.grp.faulted
			groups.mu.Unlock()
			if faulted != c.fault {
				t.Errorf("the group faulted %v, want %v", faulted, c.fault)
			}

			b := rawOn(t, f, Config{Timeline: 1, SharedGroup: true})
			defer b.close()
			da, db := a.d.Facts().FaultDomain, b.d.Facts().FaultDomain
			if joined := b.d.grp == a.d.grp; joined == c.fault {
				t.Errorf("the timeline opened after the call joined its group %v (fault domains %q and %q), want %v",
					joined, da, db, !c.fault)
			}
			if c.fault && (db == "" || db == da) {
				t.Errorf("the timeline opened after the fault names fault domain %q, the lost one %q", db, da)
			}
			want := map[bool]int{false: 1, true: 2}[c.fault]
			if g := f.objectsOf(nvidia.ClassChannelGroup); g != want {
				t.Errorf("%d channel groups with the first timeline open, want %d", g, want)
			}
			b.wait(b.submit(nil))
		})
	}
}

// under runs op with the fake's knobs as set(true) makes them, and puts
// them back with set(false).
func under(f *fake, set func(on bool), op func() error) error {
	f.mu.Lock()
	set(true)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		set(false)
		f.mu.Unlock()
	}()
	return op()
}

// onFor is a knob of the fake's that holds for every size where on, and
// none otherwise.
func onFor(on bool) func(int) bool {
	if !on {
		return nil
	}
	return func(int) bool { return true }
}

// peerOf opens a device on another fake GPU of the same machine, and
// gives it Pinned memory, which r's path maps for r's GPU.
func peerOf(r *raw) (*raw, *nvidia.Memory) {
	r.t.Helper()
	o := openRaw(r.t, Config{})
	return o, o.alloc(device.PinnedMemory, 4096)
}
