package main

import (
	"bytes"
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// The workload "faulty" launches a host kernel that faults its device at
// its faultAt-th call over the process, whether rig or the driver's
// baseline launched it: a device lost mid-run, at a call a test picks.

// faultyKernel is the kernel's name, and faultCalls its calls so far.
const faultyKernel = "rigbench_test.faulty"

var faultCalls, faultAt atomic.Int64

func init() {
	hostdev.RegisterArgs(faultyKernel, func(k *hostdev.Ctx) {
		if faultCalls.Add(1) == faultAt.Load() {
			k.Fault("the test's fault")
		}
	})
}

// withFaulty adds the workload faulty, to rig and to the driver's
// baseline, whose kernel faults its device at its at-th call, until the
// test's end.
func withFaulty(t *testing.T, at int64) {
	t.Helper()
	faultCalls.Store(0)
	faultAt.Store(at)
	workloads["faulty"] = &workload{what: "a launch of a kernel that faults at a call the test picks", lanes: perDevice(faultyLane)}
	rawLanes["faulty"] = func(r *rawDev, _ int64) (*device.Submission, int64, error) {
		img, err := r.load(hostdev.ImageOf(faultyKernel))
		if err != nil {
			return nil, 0, err
		}
		e, err := r.drv.Entry(img, faultyKernel)
		if err != nil {
			return nil, 0, err
		}
		return launch(e, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, make([]byte, 0)), 0, nil
	}
	t.Cleanup(func() {
		delete(workloads, "faulty")
		delete(rawLanes, "faulty")
		faultAt.Store(0)
	})
}

func faultyLane(e *env, o opened) (lane[rig.Point], error) {
	d := o.dev
	img, err := d.LoadImage(hostdev.ImageOf(faultyKernel))
	if err != nil {
		return lane[rig.Point]{}, err
	}
	f, err := img.Resolve(faultyKernel)
	if err != nil {
		return lane[rig.Point]{}, err
	}
	return launchLane(d, f)
}

// runReport runs rigbench in the process with args and -json, and returns
// its exit code and report.
func runReport(t *testing.T, args ...string) (int, *Report) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append(args, "-json"), &out, &errOut)
	var r Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%q: exit %d, %v\nstdout: %s\nstderr: %s", args, code, err, out.String(), errOut.String())
	}
	return code, &r
}
