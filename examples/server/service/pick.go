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

// Pick returns how to open the device spec names, and its driver. auto
// tries GPU 0 through nvdev, then through cudadev, then the host driver.
func Pick(ctx context.Context, spec string, log *slog.Logger) (func(context.Context) (*rig.Device, error), string, error) {
	opener := func(op device.Opener) func(context.Context) (*rig.Device, error) {
		return func(ctx context.Context) (*rig.Device, error) { return rig.Open(ctx, op) }
	}
	if spec == "host" {
		return opener(hostdev.Default()), "host", nil
	}
	if spec == "auto" {
		for _, c := range []struct {
			driver string
			op     device.Opener
		}{{"nv", nvdev.GPU(0)}, {"cuda", cudadev.GPU(0)}} {
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
			return opener(c.op), c.driver, nil
		}
		return opener(hostdev.Default()), "host", nil
	}
	driver, n, ok := strings.Cut(spec, ":")
	i, err := strconv.Atoi(n)
	if !ok || err != nil || i < 0 {
		return nil, "", fmt.Errorf("-device %q: want auto, host, nv:N or cuda:N", spec)
	}
	switch driver {
	case "nv":
		return opener(nvdev.GPU(i)), "nv", nil
	case "cuda":
		return opener(cudadev.GPU(i)), "cuda", nil
	}
	return nil, "", fmt.Errorf("-device %q: want auto, host, nv:N or cuda:N", spec)
}
