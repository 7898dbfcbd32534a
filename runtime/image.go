package rig

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/reclaim"
)

// Image is code loaded on a device: a cubin, fatbin or PTX on CUDA, a
// cubin on nvdev, a manifest of Go kernels on hostdev.
//
// An image lives until Unload, which unloads it once no work that runs it
// can run, or until its device is closed. An Image, and each Function of
// it, is safe for use by any goroutine.
type Image struct {
	s *imageState
}

type imageState struct {
	d   *Device
	img device.Image
	// place is the region rig allocated for a placed image, nil otherwise.
	place device.Region
	size  int64

	// mu guards funcs and unloaded, and is held for no call of the
	// driver, so that a Resolve of a function made already answers while
	// another Resolve of the image waits for the driver. calls is held
	// across the driver's Entry and Prepare of the image, with the rounds
	// of reclamation they may need, and by Unload while it marks the image
	// unloaded, so that no unload runs under them. calls is taken before
	// mu.
	calls    sync.Mutex
	mu       sync.Mutex
	funcs    map[string]*Function
	unloaded bool
	// gone is set by Unload inside the device's submit lock, where
	// Submit reads it before it publishes a launch of the image: a launch
	// either is refused or records its value in lastUse before Unload
	// reads lastUse to decide when to unload.
	gone     atomic.Bool
	used     atomic.Bool
	lastUse  atomic.Uint64 // the last value that launched a function of it
	released atomic.Bool
}

// Function is a function of an image that launches run.
type Function struct {
	img   *imageState
	entry *device.Entry
}

// LoadImage loads the binary bin on the device. Where the driver asks rig
// to place the image, rig allocates its Device memory, running the rounds
// of reclamation, and the driver lays the image there; a place of more
// bytes than the device's whole budget fails at once, as Alloc does. On a
// closed device it returns an error matching ErrClosed, and on a lost one
// the loss; a binary the driver refuses returns the driver's reason, which
// matches none of the package's sentinels, and leaves the device working.
func (d *Device) LoadImage(bin []byte) (*Image, error) {
	if err := d.made("image load"); err != nil {
		return nil, err
	}
	if err := d.begin(); err != nil {
		return nil, err
	}
	defer d.end()
	code, err := d.drv.Image(bin)
	if err != nil {
		return nil, fmt.Errorf("rig: image on %s: %w", d.name, d.fault(err))
	}
	st := &imageState{d: d, img: code.Loaded, funcs: map[string]*Function{}}
	if code.Loaded == nil {
		if code.Place < 1 || code.Lay == nil {
			return nil, fmt.Errorf("rig: image on %s: the driver answered neither an image nor a place", d.name)
		}
		if code.Place > math.MaxInt-3 {
			return nil, fmt.Errorf("rig: image on %s: the driver answered a place of %d bytes, which whole words of it pass the largest int", d.name, code.Place)
		}
		size := (code.Place + 3) &^ 3
		r, err := d.allocRegion(context.Background(), device.DeviceMemory, size)
		if err != nil {
			return nil, err
		}
		img, err := code.Lay(r)
		if err != nil {
			_ = d.drv.Free(r)
			d.budget.Give(d.charge(size))
			return nil, fmt.Errorf("rig: image on %s: laying it out: %w", d.name, d.fault(err))
		}
		st.img, st.place, st.size = img, r, d.charge(size)
		d.stats.bytes[device.DeviceMemory].Add(st.size)
	}
	d.objMu.Lock()
	if d.images == nil {
		d.objMu.Unlock()
		st.release()
		return nil, d.closed
	}
	d.images[st] = struct{}{}
	d.objMu.Unlock()
	return &Image{s: st}, nil
}

// Resolve returns the image's function name, made ready to launch. Where
// the device lacks the memory the function's launches need, it runs the
// rounds of reclamation, and returns an error matching ErrOutOfMemory
// after the last, or the device's loss or close where one comes during
// the rounds. An image with no such function returns an error
// matching ErrNoFunction; an image after Unload, one matching ErrFreed;
// a nil Image, or one no LoadImage made, one matching ErrInvalid. A
// function resolved before returns at once, also after the device closed
// or was lost; making a new one then returns the device's ErrClosed or
// loss. Submissions of a closed or lost device fail at Submit.
func (im *Image) Resolve(name string) (*Function, error) {
	if im == nil || im.s == nil {
		return nil, fmt.Errorf("rig: resolve of a nil image: %w", ErrInvalid)
	}
	s := im.s
	if f, err := s.made(name); f != nil || err != nil {
		return f, err
	}
	s.calls.Lock()
	defer s.calls.Unlock()
	if f, err := s.made(name); f != nil || err != nil {
		return f, err // made meanwhile, or unloaded
	}
	d := s.d
	if err := d.begin(); err != nil {
		return nil, err
	}
	defer d.end()
	var e *device.Entry
	lack, err := reclaim.Retry(func() (int64, error) {
		// A loss or a Close during a round ends the rounds, as it
		// does an allocation's.
		if err := d.usable(); err != nil {
			return 0, err
		}
		var err error
		e, err = d.drv.Entry(s.img, name)
		var nm *device.NoMemory
		if errors.As(err, &nm) {
			return max(nm.N, 1), nil
		}
		return 0, err
	}, d.reclaimRound)
	if lack > 0 {
		return nil, &OutOfMemoryError{Device: d.name, What: fmt.Sprintf("the launches of %q", name), Lacking: lack}
	}
	if errors.Is(err, device.ErrAbsent) {
		return nil, fmt.Errorf("rig: resolve %q on %s: %w", name, d.name, ErrNoFunction)
	}
	if err != nil {
		return nil, fmt.Errorf("rig: resolve %q on %s: %w", name, d.name, d.fault(err))
	}
	if e.Name == "" {
		e.Name = name
	}
	f := &Function{img: s, entry: e}
	s.mu.Lock()
	s.funcs[name] = f
	s.mu.Unlock()
	return f, nil
}

// made returns the function name that Resolve made, nil where none, or an
// error matching ErrFreed after Unload.
func (s *imageState) made(name string) (*Function, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unloaded {
		return nil, fmt.Errorf("rig: resolve %q: %w", name, ErrFreed)
	}
	return s.funcs[name], nil
}

// Prepare starts making the named functions ready to launch, without
// waiting, so that their Resolve finds them made. After Unload it returns
// an error matching ErrFreed, on a closed device one matching ErrClosed,
// on a lost one the loss, and on a nil Image one matching ErrInvalid.
func (im *Image) Prepare(names ...string) error {
	if im == nil || im.s == nil {
		return fmt.Errorf("rig: prepare of a nil image: %w", ErrInvalid)
	}
	s := im.s
	// s.calls keeps Unload from marking the image gone while the driver
	// prepares its functions, as it does for Resolve.
	s.calls.Lock()
	defer s.calls.Unlock()
	s.mu.Lock()
	unloaded := s.unloaded
	s.mu.Unlock()
	if unloaded {
		return fmt.Errorf("rig: prepare %q: %w", names, ErrFreed)
	}
	if err := s.d.begin(); err != nil {
		return err
	}
	defer s.d.end()
	for _, n := range names {
		if err := s.d.drv.Prepare(s.img, n); err != nil {
			return fmt.Errorf("rig: prepare %q on %s: %w", n, s.d.name, s.d.fault(err))
		}
	}
	return nil
}

// Unload unloads the image once no work that runs it can run. A Submit
// that launches one of its functions afterwards returns an error matching
// ErrFreed, whether its submission was made before or after the Unload;
// a Submit that returned before Unload began runs, and the image is
// unloaded once its point is reached. Where no work of the image is left
// to run, Unload unloads it at once, and returns the driver's refusal if
// the driver refuses; an unload the driver refuses, then or later, leaves
// the image loaded until the device closes, which unloads it. On a device
// closed or lost, Unload leaves the image to the device's supervisor,
// which unloads it once no work of the image is left to run, or as the
// device's close gives everything back, and returns nil. A
// second Unload does nothing; on a nil Image it returns an error matching
// ErrInvalid.
func (im *Image) Unload() error {
	if im == nil || im.s == nil {
		return fmt.Errorf("rig: unload of a nil image: %w", ErrInvalid)
	}
	s := im.s
	// s.calls: an Entry or Prepare of the image in the driver ends first.
	s.calls.Lock()
	s.mu.Lock()
	was := s.unloaded
	s.unloaded = true
	s.mu.Unlock()
	s.calls.Unlock()
	if was {
		return nil
	}
	d := s.d
	d.mu.Lock()
	s.gone.Store(true)
	d.unlockSubmit()
	// Marked gone, the image records no later launch: a due image stays
	// due.
	due := s.Due()
	if err := d.begin(); err != nil {
		// Closed or lost. The image is queued inside objMu: the reaping
		// clears the device's lists inside it and sweeps the deferred
		// frees after, so the image is either among its images or among
		// its deferred frees.
		d.objMu.Lock()
		if d.images != nil {
			delete(d.images, s)
			d.deferred.Add(s)
		}
		d.objMu.Unlock()
		d.sup.poke()
		return nil
	}
	// Close waits for end: the reaping has not begun.
	defer d.end()
	d.objMu.Lock()
	delete(d.images, s)
	d.objMu.Unlock()
	if due {
		return s.unload()
	}
	d.deferred.Add(s)
	d.sup.poke()
	return nil
}

// launchable returns an error matching ErrFreed where a launch of the
// submission runs a function of an image that Unload marked gone. The
// device's submit lock is held.
func (s *Submission) launchable() error {
	for _, img := range s.imgs {
		if img.gone.Load() {
			for i, p := range s.parts {
				if p.fn != nil && p.fn.img == img {
					return fmt.Errorf("rig: part %d launches %q of an unloaded image on %s: %w", i, p.fn.Name(), s.d.name, ErrFreed)
				}
			}
		}
	}
	return nil
}

// Due reports whether the last launch of the image's functions is reached.
func (s *imageState) Due() bool {
	return !s.used.Load() || (Point{d: s.d, v: s.lastUse.Load()}).passed()
}

// Release unloads the image (reclaim.Item).
func (s *imageState) Release() { _ = s.unload() }

func (s *imageState) unload() error {
	if s.released.Swap(true) {
		return nil
	}
	d := s.d
	if err := d.drv.Unload(s.img); err != nil {
		// The driver keeps the image loaded, and its place: it goes
		// back among the device's images, which the reaping unloads
		// at Close. Where the reaping took them already (a deferred
		// unload that it gives back), it is unloaded now as they are,
		// uncounted, and its place freed.
		s.released.Store(false)
		d.objMu.Lock()
		reaping := d.images == nil
		if !reaping {
			d.images[s] = struct{}{}
		}
		d.objMu.Unlock()
		if reaping {
			s.release()
			return fmt.Errorf("rig: unload on %s: %w", d.name, err)
		}
		return fmt.Errorf("rig: unload on %s: %w", d.name, d.fault(err))
	}
	if s.place != nil {
		_ = d.drv.Free(s.place)
		d.budget.Give(s.size)
		d.stats.bytes[device.DeviceMemory].Add(-s.size)
	}
	return nil
}

// release unloads the image uncounted, at the device's reaping.
func (s *imageState) release() {
	if s.released.Swap(true) {
		return
	}
	_ = s.d.drv.Unload(s.img)
	if s.place != nil {
		_ = s.d.drv.Free(s.place)
		s.d.budget.Give(s.size)
		s.d.stats.bytes[device.DeviceMemory].Add(-s.size)
	}
}

// A nil or zero Function (Resolve did not make it) answers the zero value
// of each accessor.

// Name is the function's name.
func (f *Function) Name() string { return f.e().Name }

// Params is the number of parameter bytes the function reads.
func (f *Function) Params() int { return f.e().Params }

// Threads is the most threads a group of the function has.
func (f *Function) Threads() int { return f.e().Threads }

// Shared is the most dynamic shared memory a group of it takes.
func (f *Function) Shared() int { return f.e().Shared }

// Entry is the driver's entry for the function, for compiled code that
// launches it itself; nil for a nil or zero Function.
func (f *Function) Entry() *device.Entry {
	if f == nil {
		return nil
	}
	return f.entry
}

// noEntry is the entry a nil or zero Function's accessors read.
var noEntry device.Entry

// e is the function's entry, or an empty one for a nil or zero Function.
func (f *Function) e() *device.Entry {
	if f == nil || f.entry == nil {
		return &noEntry
	}
	return f.entry
}
