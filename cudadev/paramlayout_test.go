//go:build linux && (amd64 || arm64)

package cudadev

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rig-go/rig/device"
)

// paramAnswers is a fake cuFuncGetParamInfo that states parameter i at
// at(i), counting the calls in calls; it answers CUDA_ERROR_INVALID_VALUE
// (no such parameter) where at says so, and past 2*paramMost+2 calls, so
// that a loop that trusts CUDA to end still ends.
func paramAnswers(calls *atomic.Int64, at func(i uint64) (off, size uint64, ok bool)) fakeFn {
	return func(a [6]uintptr) result {
		if calls.Add(1) > 2*paramMost+2 {
			return errInvalidValue
		}
		off, size, ok := at(uint64(a[1]))
		if !ok {
			return errInvalidValue
		}
		*cWord(a[2]), *cWord(a[3]) = off, size
		return 0
	}
}

// TestParamLayout: paramLayout returns the parameters CUDA states, and an
// error naming the kernel where their offsets go backwards, overlap or
// pass the most parameter bytes CUDA launches, or where CUDA states more
// parameters than those bytes hold; it asks CUDA no more than paramMost+1
// times.
func TestParamLayout(t *testing.T) {
	// list states the parameters ps, of offset and size, and no more.
	list := func(ps ...[2]uint64) func(uint64) (uint64, uint64, bool) {
		return func(i uint64) (uint64, uint64, bool) {
			if i >= uint64(len(ps)) {
				return 0, 0, false
			}
			return ps[i][0], ps[i][1], true
		}
	}
	for _, c := range []struct {
		name   string
		at     func(uint64) (uint64, uint64, bool)
		layout []device.Param
		end    int
		why    string // "" where paramLayout answers the layout
	}{
		{"none", list(), []device.Param{}, 0, ""},
		{"three", list([2]uint64{0, 8}, [2]uint64{8, 4}, [2]uint64{16, 8}),
			[]device.Param{{Offset: 0, Size: 8}, {Offset: 8, Size: 4}, {Offset: 16, Size: 8}}, 24, ""},
		{"the most bytes", list([2]uint64{0, 8}, [2]uint64{8, paramMost - 8}),
			[]device.Param{{Offset: 0, Size: 8}, {Offset: 8, Size: paramMost - 8}}, paramMost, ""},
		{"backwards", list([2]uint64{8, 8}, [2]uint64{0, 8}), nil, 0,
			`kernel "k": CUDA states parameter 1 at byte 0, before parameter 0 at byte 8`},
		{"overlapping", list([2]uint64{0, 8}, [2]uint64{8, 8}, [2]uint64{12, 4}), nil, 0,
			`kernel "k": CUDA states parameter 2 at byte 12, within parameter 1, of 8 bytes at byte 8`},
		{"a byte past the most", list([2]uint64{0, 8}, [2]uint64{8, paramMost - 7}), nil, 0,
			`kernel "k": CUDA states parameter 1 at byte 8, of 32757 bytes, past the 32764 parameter bytes`},
		{"at 2^64-8, of 16 bytes", list([2]uint64{1<<64 - 8, 16}), nil, 0,
			"parameter 0 at byte 18446744073709551608, of 16 bytes, past the 32764"},
		{"a byte each, without end", func(i uint64) (uint64, uint64, bool) { return i, 1, true }, nil, 0,
			"CUDA states parameter 32764 at byte 32764, of 1 bytes, past the 32764"},
		{"no bytes each, without end", func(uint64) (uint64, uint64, bool) { return 0, 0, true }, nil, 0,
			`kernel "k": CUDA states more than 32764 parameters`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls atomic.Int64
			tab := fakeTable(t, map[string]fakeFn{"cuFuncGetParamInfo": paramAnswers(&calls, c.at)})
			d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
			layout, end, err := d.paramLayout(0xf1, "k")
			if n := calls.Load(); n > paramMost+1 {
				t.Errorf("%d calls of cuFuncGetParamInfo, more than %d", n, paramMost+1)
			}
			if c.why != "" {
				if err == nil || !strings.Contains(err.Error(), c.why) {
					t.Fatalf("layout of %d parameters, end %d, error %v; want an error naming %q", len(layout), end, err, c.why)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if end != c.end || len(layout) != len(c.layout) {
				t.Fatalf("layout %v, end %d; want %v, end %d", layout, end, c.layout, c.end)
			}
			for i := range layout {
				if layout[i] != c.layout[i] {
					t.Fatalf("layout %v; want %v", layout, c.layout)
				}
			}
		})
	}
}

// TestEntryParamLayout: Entry refuses, naming the kernel, a function whose
// parameters CUDA states overlapping, and keeps no entry for it.
func TestEntryParamLayout(t *testing.T) {
	var calls atomic.Int64
	tab := fakeTable(t, map[string]fakeFn{"cuFuncGetParamInfo": paramAnswers(&calls, func(i uint64) (uint64, uint64, bool) {
		return 4 * i, 8, i < 2
	})})
	d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
	d.major = 9
	img := &image{d: d, mod: 0x77, funcs: map[string]uintptr{"k": 0xf1}, entries: map[string]*device.Entry{}}
	e, err := d.Entry(img, "k")
	if err == nil || !strings.Contains(err.Error(), `kernel "k": CUDA states parameter 1 at byte 4, within parameter 0`) {
		t.Fatalf("entry %+v, error %v; want an error naming kernel k's overlapping parameters", e, err)
	}
	if len(img.entries) != 0 {
		t.Fatalf("the image keeps %d entries after the refusal", len(img.entries))
	}
}
