package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	def := config{Workload: "empty", Levels: []int{1}, C: 1, Depth: 8, Duration: defaultDuration, Timeout: 10 * time.Second, Rounds: 5, Baseline: "auto", Slow: 10 * time.Millisecond}
	with := func(f func(c *config)) config {
		c := def
		f(&c)
		return c
	}
	for _, tc := range []struct {
		args []string
		want config
	}{
		{nil, def},
		{[]string{"-duration", "1s"}, with(func(c *config) { c.Duration = time.Second })},
		{[]string{"-n", "100"}, with(func(c *config) { c.N, c.Duration = 100, 0 })},
		{[]string{"-n", "0"}, def},
		{[]string{"-n", "100", "-duration", "2s"}, with(func(c *config) { c.N, c.Duration = 100, 2*time.Second })},
		{[]string{"-duration", "0"}, with(func(c *config) { c.Duration = 0 })},
		{[]string{"-device", "host"}, with(func(c *config) { c.Devices = []spec{{Driver: "host"}} })},
		{[]string{"-device", "host:1,cuda:2", "-device", "nv:0"}, with(func(c *config) {
			c.Devices = []spec{{Driver: "host", Index: 1}, {Driver: "cuda", Index: 2}, {Driver: "nv"}}
		})},
		{[]string{"-workload", "d2d", "-size", "64KiB"}, with(func(c *config) { c.Workload, c.Size = "d2d", 64<<10 })},
		{[]string{"-workload", "fill", "-size", "3M"}, with(func(c *config) { c.Workload, c.Size = "fill", 3<<20 })},
		{[]string{"-workload", "twice", "-size", "1024"}, with(func(c *config) { c.Workload, c.Size = "twice", 1024 })},
		{[]string{"-workload", "mixed", "-c", "4", "-depth", "1"}, with(func(c *config) { c.Workload, c.Levels, c.C, c.Depth = "mixed", []int{4}, 4, 1 })},
		{[]string{"-workload", "mixed", "-timelines", "2"}, with(func(c *config) { c.Workload, c.Timelines = "mixed", 2 })},
		{[]string{"-c", "1,4, 16,64"}, with(func(c *config) { c.Levels, c.C = []int{1, 4, 16, 64}, 1 })},
		{[]string{"-c", "10,100,1000,10000", "-depth", "1"}, with(func(c *config) { c.Levels, c.C, c.Depth = []int{10, 100, 1000, 10000}, 10, 1 })},
		{[]string{"-c", "8", "-compare"}, with(func(c *config) { c.Levels, c.C, c.Compare = []int{8}, 8, true })},
		{[]string{"-rate", "20k"}, with(func(c *config) { c.Rate = 20e3 })},
		{[]string{"-rate", "1.5M"}, with(func(c *config) { c.Rate = 1.5e6 })},
		{[]string{"-rate", "250"}, with(func(c *config) { c.Rate = 250 })},
		{[]string{"-rate", "0.25"}, with(func(c *config) { c.Rate = 0.25 })},
		{[]string{"-rate", "0.001"}, with(func(c *config) { c.Rate = 0.001 })},
		{[]string{"-rate", "0"}, def},
		{[]string{"-c", "64", "-depth", "65536"}, with(func(c *config) { c.Levels, c.C, c.Depth = []int{64}, 64, 65536 })},
		{[]string{"-c", "100000", "-depth", "41"}, with(func(c *config) { c.Levels, c.C, c.Depth = []int{100000}, 100000, 41 })},
		{[]string{"-workload", "mixed", "-device", "host,host:1", "-c", "100000"}, with(func(c *config) {
			c.Workload, c.Devices, c.Levels, c.C = "mixed", []spec{{Driver: "host"}, {Driver: "host", Index: 1}}, []int{100000}, 100000
		})},
		{[]string{"-compare", "-rounds", "1"}, with(func(c *config) { c.Compare, c.Rounds = true, 1 })},
		{[]string{"-compare", "-baseline", "driver"}, with(func(c *config) { c.Compare, c.Baseline = true, "driver" })},
		{[]string{"-compare", "-baseline", "pipeline"}, with(func(c *config) { c.Compare, c.Baseline = true, "pipeline" })},
		{[]string{"-timeout", "50ms", "-json", "-plot", "a.svg", "-trace", "t.json", "-compare"}, with(func(c *config) {
			c.Timeout, c.JSON, c.Plot, c.Trace, c.Compare = 50*time.Millisecond, true, "a.svg", "t.json", true
		})},
	} {
		got, err := parseFlags(tc.args, io.Discard)
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", tc.args, *got, tc.want)
		}
	}
}

func TestParseFlagsErrors(t *testing.T) {
	abs, err := filepath.Abs("same.out")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string // in the message
	}{
		{[]string{"-workload", "nope"}, "unknown workload"},
		{[]string{"-c", "0"}, `flag -c: "0" is not a count`},
		{[]string{"-c", "100001"}, `"100001" is not a count`},
		{[]string{"-c", "1,,4"}, `"" is not a count`},
		{[]string{"-c", "1,x"}, `"x" is not a count`},
		{[]string{"-c", "4,-1"}, `"-1" is not a count`},
		{[]string{"-c", strings.Repeat("1,", 64) + "1"}, "65 levels"},
		{[]string{"-c", "1,4", "-compare"}, "take one level"},
		{[]string{"-c", "1,4", "-trace", "t.json"}, "take one level"},
		{[]string{"-c", "1,4", "-plot", "p.svg"}, "take one level"},
		{[]string{"-depth", "0"}, "-depth 0"},
		{[]string{"-plot", "out", "-trace", "./out"}, "-plot and -trace name the same file"},
		{[]string{"-cpuprofile", "p", "-gotrace", "p"}, "-cpuprofile and -gotrace name the same file"},
		{[]string{"-cpuprofile", "same.out", "-trace", abs}, "-cpuprofile and -trace name the same file"},
		{[]string{"-rounds", "3"}, "-rounds applies to -compare"},
		{[]string{"-split"}, "-split applies to -depth 1, and -depth is 8"},
		{[]string{"-split", "-depth", "2"}, "-split applies to -depth 1, and -depth is 2"},
		{[]string{"-baseline", "driver"}, "-baseline applies to -compare"},
		{[]string{"-duration", "-1s"}, "-duration"},
		{[]string{"-duration", "soon"}, "invalid value"},
		{[]string{"-n", "-5"}, "-n -5"},
		{[]string{"-timeout", "0"}, "-timeout"},
		{[]string{"-rounds", "0"}, "-rounds 0"},
		{[]string{"-baseline", "libcuda"}, "-baseline"},
		{[]string{"-rate", "-3"}, "rate"},
		{[]string{"-rate", "fast"}, "rate"},
		{[]string{"-rate", "1e-12"}, "from 0.001 to 1e9"},
		{[]string{"-rate", "0.0005"}, "from 0.001 to 1e9"},
		{[]string{"-rate", "1e-300k"}, "from 0.001 to 1e9"},
		{[]string{"-rate", "2000M"}, "from 0.001 to 1e9"},
		{[]string{"-rate", "NaN"}, "rate"},
		{[]string{"-rate", "Inf"}, "rate"},
		{[]string{"-size", "0"}, "size"},
		{[]string{"-size", "12XB"}, "size"},
		{[]string{"-size", "2T"}, "size"},
		{[]string{"-workload", "empty", "-size", "4k"}, "does not apply"},
		{[]string{"-workload", "twice", "-size", "6"}, "multiple of 4"},
		{[]string{"-device", "gpu:0"}, "unknown device"},
		{[]string{"-device", "cuda"}, "lacks its index"},
		{[]string{"-device", "cuda:x"}, "not a number"},
		{[]string{"-device", "host:-1"}, "not a number"},
		{[]string{"-device", ""}, "empty device"},
		{[]string{"-device", "host,host:0"}, "named twice"},
		{[]string{"-workload", "mixed", "-device", "host,host:1,host:2"}, "-workload mixed runs on two devices"},
		{[]string{"-workload", "mixed", "-device", "host,host:1", "-timelines", "2"}, "-workload mixed runs on two devices"},
		{[]string{"-workload", "mixed", "-timelines", "3"}, "-workload mixed runs on two devices"},
		{[]string{"-c", "20000", "-depth", "65536"}, "-c 20000 at -depth 65536 on 1 device(s) keeps 1310720000 submissions in flight: want at most 4194304"},
		{[]string{"-c", "1,100000", "-depth", "64"}, "-c 100000 at -depth 64 on 1 device(s)"},
		{[]string{"-c", "100000", "-device", "host,host:1"}, "-c 100000 on 2 device(s) makes 200000 submitters: want at most 100000 in all"},
		{[]string{"-c", "2000", "-timelines", "64"}, "-c 2000 on 64 device(s) makes 128000 submitters"},
		{[]string{"-waitspin", "1000h"}, `invalid value "1000h" for flag -waitspin: want a duration from 0 (park at once) to 1s`},
		{[]string{"-waitspin", "1.000000001s"}, `invalid value "1.000000001s" for flag -waitspin: want a duration from 0 (park at once) to 1s`},
		{[]string{"-waitspin", "2562047h"}, `for flag -waitspin: want a duration from 0 (park at once) to 1s`},
		{[]string{"-waitspin", "-1us"}, `invalid value "-1us" for flag -waitspin: want a duration from 0`},
		{[]string{"-waitspin", "soon"}, `invalid value "soon" for flag -waitspin: want a duration`},
		{[]string{"-bogus"}, "not defined"},
		{[]string{"stray"}, "unexpected argument"},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%q: %v, want a usage error", tc.args, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %q lacks %q", tc.args, err, tc.want)
		}
	}
}

// TestWaitSpinFlag: -waitspin takes 0 (every wait parks at once) to
// maxWaitSpin (1s), and a refused value leaves the devices' default.
func TestWaitSpinFlag(t *testing.T) {
	defer func() { waitSpin = -1 }()
	for _, tc := range []struct {
		arg  string
		want time.Duration // -1: refused, the default kept
	}{
		{"0", 0},
		{"0s", 0},
		{"5us", 5 * time.Microsecond},
		{"20ms", 20 * time.Millisecond},
		{"1s", time.Second},
		{"1.000000001s", -1},
		{"1m", -1},
		{"1000h", -1},
		{"-1ns", -1},
		{"-1s", -1},
	} {
		waitSpin = -1
		_, err := parseFlags([]string{"-waitspin", tc.arg}, io.Discard)
		switch {
		case tc.want < 0 && err == nil:
			t.Errorf("-waitspin %s accepted, waitSpin %v", tc.arg, waitSpin)
		case tc.want >= 0 && err != nil:
			t.Errorf("-waitspin %s: %v", tc.arg, err)
		}
		if waitSpin != tc.want {
			t.Errorf("-waitspin %s: waitSpin %v, want %v (-1ns: the devices' default)", tc.arg, waitSpin, tc.want)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1": 1, "4096": 4096, "4k": 4096, "4K": 4096, "4KiB": 4096, "4kb": 4096,
		"1MiB": 1 << 20, "2m": 2 << 20, "1GiB": 1 << 30, "1g": 1 << 30, "512B": 512, " 8k ": 8192} {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}

// TestRunExitCodes checks the exit codes of run for bad command lines and
// devices that do not open: 2, with a message on stderr and nothing on
// stdout; and 0 for -h.
func TestRunExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-h"}, 0, "usage: rigbench"},
		{[]string{"-workload", "nope"}, 2, "unknown workload"},
		{[]string{"-c", "-1"}, 2, `flag -c: "-1" is not a count`},
		{[]string{"-device", "nv:1023", "-duration", "10ms"}, 2, "device nv:1023 is not available"},
		{[]string{"-device", "cuda:1023", "-duration", "10ms"}, 2, "device cuda:1023 is not available"},
		{[]string{"-device", "host", "-device", "cuda:1023", "-duration", "10ms"}, 2, "device cuda:1023 is not available"},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), tc.args, &out, &errOut)
		if code != tc.code {
			t.Errorf("%q: exit %d, want %d; stderr %q", tc.args, code, tc.code, errOut.String())
		}
		if !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%q: stderr %q lacks %q", tc.args, errOut.String(), tc.want)
		}
		if out.Len() != 0 {
			t.Errorf("%q: stdout %q", tc.args, out.String())
		}
	}
	// -h is not an error.
	if _, err := parseFlags([]string{"-help"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-help: %v", err)
	}
}

// TestMixedDrivers checks that the mixed workload refuses two devices of
// two drivers, naming both, and takes one driver's.
func TestMixedDrivers(t *testing.T) {
	cuda, nv, cuda1 := opened{spec: spec{Driver: "cuda"}}, opened{spec: spec{Driver: "nv"}}, opened{spec: spec{Driver: "cuda", Index: 1}}
	if err := mixedDrivers("mixed", []opened{cuda, nv}); err == nil || !strings.Contains(err.Error(), "cuda:0 and nv:0") {
		t.Errorf("cuda:0 and nv:0 answered %v", err)
	}
	for _, c := range []struct {
		w    string
		devs []opened
	}{{"mixed", []opened{cuda, cuda1}}, {"mixed", []opened{cuda}}, {"empty", []opened{cuda, nv}}} {
		if err := mixedDrivers(c.w, c.devs); err != nil {
			t.Errorf("%s on %d devices: %v", c.w, len(c.devs), err)
		}
	}
}
