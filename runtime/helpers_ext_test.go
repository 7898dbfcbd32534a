package rig_test

import (
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/hostdev"
	"github.com/rig-go/rig/internal/testutil"
	rig "github.com/rig-go/rig/runtime"
)

var names atomic.Int64

// host opens a host device of a fresh name, closed when the test ends.
func host(t testing.TB, c hostdev.Config) *rig.Device {
	t.Helper()
	if c.Name == "" {
		c.Name = "test-" + itoa(names.Add(1))
	}
	return testutil.Open(t, hostdev.Open(c))
}

func itoa(n int64) string {
	b := make([]byte, 0, 20)
	if n == 0 {
		return "0"
	}
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// fn loads the named kernels on d and resolves the first.
func fn(t testing.TB, d *rig.Device, name string) *rig.Function {
	t.Helper()
	return testutil.Functions(t, d, hostdev.ImageOf(name), name)[0]
}

// Short names for testutil's must-helpers, which the tests call often.
var (
	sub   = testutil.Submission
	alloc = testutil.Alloc
	wait  = testutil.Wait
)

// sleepFor is a run of a "sleep" launch of ns nanoseconds.
func sleepRun(s *rig.Submission, ns time.Duration) *rig.Run {
	r := s.Take()
	binary.LittleEndian.PutUint64(r.Params(0), uint64(ns))
	return r
}
