package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// driver makes the openers of one kind of device. The host driver is
// always built in; the GPU drivers register themselves from files of their
// own, so that the command builds where their packages do not.
type driver struct {
	// opener is the opener of device i.
	opener func(i int) (device.Opener, error)
	// what names the driver in messages, such as "the CUDA driver (cudadev)".
	what string
	// image is the binary that holds the kernel rigbench launches (empty
	// or twice), for the device named dev of the architecture arch.
	image func(arch, dev, kernel string) ([]byte, error)
	// exclusive is true where a device of the driver cannot be open twice
	// at once, as a CUDA GPU takes one device at a time: -compare then
	// closes rig's devices before each round of the driver's baseline, and
	// opens them again after it.
	exclusive bool
}

// drivers are the drivers built in, by the name -device gives them.
var drivers = map[string]*driver{
	"host": {
		what: "the host driver (hostdev)",
		opener: func(i int) (device.Opener, error) {
			if i == 0 {
				return hostdev.Default(), nil
			}
			return hostdev.Open(hostdev.Config{Name: fmt.Sprintf("host:%d", i)}), nil
		},
		image: func(_, _, k string) ([]byte, error) { return hostdev.ImageOf(k), nil },
	},
}

// gpuOrder is the order in which the default device tries the GPU drivers.
var gpuOrder = []string{"cuda", "nv"}

// unavailableError says that a device cannot be opened: rigbench exits 2.
type unavailableError struct {
	spec spec
	err  error
}

func (e *unavailableError) Error() string {
	what := "its driver"
	if d := drivers[e.spec.Driver]; d != nil {
		what = d.what
	}
	return fmt.Sprintf("device %s is not available through %s: %v", e.spec, what, e.err)
}

func (e *unavailableError) Unwrap() error { return e.err }

// opened is an open device and the spec that named it.
type opened struct {
	spec spec
	dev  *rig.Device
}

// openDevices opens the devices the specs name, or the default device
// where there are none: device 0 of the first GPU driver built in that
// opens one, and the host device otherwise, with a note of why no GPU's
// opened. A device that does not open returns an *unavailableError, having
// closed those opened.
func openDevices(ctx context.Context, specs []spec) ([]opened, []string, error) {
	var notes []string
	if len(specs) == 0 {
		for _, name := range gpuOrder {
			if drivers[name] == nil {
				continue
			}
			s := spec{Driver: name}
			d, err := openSpec(ctx, s)
			if err == nil {
				return []opened{{s, d}}, notes, nil
			}
			notes = append(notes, fmt.Sprintf("the default device is not %s: %v", s, err))
		}
		specs = []spec{{Driver: "host"}}
	}
	var out []opened
	for _, s := range specs {
		d, err := openSpec(ctx, s)
		if err != nil {
			closeDevices(out)
			return nil, notes, err
		}
		out = append(out, opened{s, d})
	}
	return out, notes, nil
}

// opener is the opener of the device s names, or an *unavailableError.
func (s spec) opener() (device.Opener, error) {
	drv := drivers[s.Driver]
	if drv == nil {
		return device.Opener{}, &unavailableError{s, errors.New("this build of rigbench has no such driver")}
	}
	op, err := drv.opener(s.Index)
	if err != nil {
		return device.Opener{}, &unavailableError{s, err}
	}
	if s.Timeline > 0 {
		mk := timelineOpeners[s.Driver]
		if mk == nil {
			return device.Opener{}, &unavailableError{s, errors.New("the driver opens one timeline of a device")}
		}
		op = mk(s.Index, s.Timeline)
	}
	return op, nil
}

// openSpec opens the device s names.
func openSpec(ctx context.Context, s spec) (*rig.Device, error) {
	op, err := s.opener()
	if err != nil {
		return nil, err
	}
	d, err := rig.Open(ctx, op)
	if err != nil {
		return nil, &unavailableError{s, err}
	}
	if waitSpin >= 0 {
		d.SetWaitSpin(waitSpin)
	}
	return d, nil
}

// waitSpin is -waitspin: the devices' wait spin (Device.SetWaitSpin), or
// below 0 for their default.
var waitSpin time.Duration = -1

// companion opens a second device of the driver of s for the mixed
// workload's waits across devices, or returns why it cannot.
func companion(ctx context.Context, have []opened) (opened, error) {
	s := have[0].spec
	taken := map[spec]bool{}
	for _, o := range have {
		taken[o.spec] = true
	}
	for i := s.Index + 1; i < s.Index+8; i++ {
		c := spec{Driver: s.Driver, Index: i}
		if taken[c] {
			continue
		}
		d, err := openSpec(ctx, c)
		if err != nil {
			return opened{}, err
		}
		return opened{c, d}, nil
	}
	return opened{}, fmt.Errorf("no free index of %s", s.Driver)
}

// closeDevices closes the devices and waits until each gave back what it
// held, for at most a few seconds each.
func closeDevices(ds []opened) { _ = closeDevicesWithin(ds, 5*time.Second) }

// closeDevicesWithin closes the devices and waits until each gave back
// what it held (Done), for at most limit each. It returns an error naming
// a device that did not within its limit.
func closeDevicesWithin(ds []opened, limit time.Duration) error {
	for _, o := range ds {
		_ = o.dev.Close()
	}
	var err error
	for _, o := range ds {
		t := time.NewTimer(limit)
		select {
		case <-o.dev.Done():
		case <-t.C:
			if err == nil {
				err = fmt.Errorf("device %s did not give back what it held within %v of its close", o.spec, limit)
			}
		}
		t.Stop()
	}
	return err
}

// retryOpen calls open until it succeeds or limit has passed, and returns
// its last error: a GPU that a closed device left may take a moment to
// free, as its last work's events end.
func retryOpen(limit time.Duration, open func() error) error {
	deadline := time.Now().Add(limit)
	for wait := 100 * time.Microsecond; ; wait = min(2*wait, 20*time.Millisecond) {
		err := open()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(wait)
	}
}
