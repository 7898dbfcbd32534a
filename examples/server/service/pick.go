package service

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/rig-go/rig/cudadev"
	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	"github.com/rig-go/rig/nvdev"
	rig "github.com/rig-go/rig/runtime"
)

// Pick returns how to open the device spec names on each seat of
// Config.Open, and its driver. auto tries GPU 0 through nvdev, then
// through cudadev, then the host driver. The seats are GPU i's timelines 0
// and 1 through nvdev (named "NV:i" and "NV:i/1"), two host devices
// ("host" and "host/1"), and GPU i through cudadev on both (the service
// does not reopen a CUDA device).
func Pick(ctx context.Context, spec string, log *slog.Logger) (func(context.Context, int) (*rig.Device, error), string, error) {
	opener := func(seats ...device.Opener) func(context.Context, int) (*rig.Device, error) {
		return func(ctx context.Context, seat int) (*rig.Device, error) {
			if seat < 0 || seat >= len(seats) {
				seat = 0
			}
			return rig.Open(ctx, seats[seat])
		}
	}
	host := opener(hostdev.Default(), hostdev.Open(hostdev.Config{Name: "host/1"}))
	nv := func(i int) func(context.Context, int) (*rig.Device, error) {
		return opener(nvdev.Timeline(i, 0), nvdev.Timeline(i, 1))
	}
	if spec == "host" {
		return host, "host", nil
	}
	if spec == "auto" {
		for _, c := range []struct {
			driver string
			op     device.Opener
		}{{"nv", nvdev.Timeline(0, 0)}, {"cuda", cudadev.GPU(0)}} {
			d, err := rig.Open(ctx, c.op)
			if err != nil {
				log.Info("no GPU through this driver", "driver", c.driver, "err", err)
				continue
			}
			_, ierr := Image(c.driver, d.Arch())
			_ = d.Close()
			<-d.Done()
			if ierr != nil {
				log.Info("the GPU cannot run the service's kernels", "driver", c.driver, "err", ierr)
				continue
			}
			if c.driver == "nv" {
				return nv(0), c.driver, nil
			}
			return opener(c.op), c.driver, nil
		}
		return host, "host", nil
	}
	driver, n, ok := strings.Cut(spec, ":")
	i, err := strconv.Atoi(n)
	if !ok || err != nil || i < 0 {
		return nil, "", fmt.Errorf("-device %q: want auto, host, nv:N or cuda:N", spec)
	}
	switch driver {
	case "nv":
		return nv(i), "nv", nil
	case "cuda":
		return opener(cudadev.GPU(i)), "cuda", nil
	}
	return nil, "", fmt.Errorf("-device %q: want auto, host, nv:N or cuda:N", spec)
}
