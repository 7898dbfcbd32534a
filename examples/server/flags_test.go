package main

import (
	"bytes"
	"errors"
	"flag"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rig-go/rig/examples/server/service"
)

// TestSlotsFlag: -slots takes 0 (the service's default) and positive
// counts up to service.MaxSlots, and refuses a negative count or a larger
// one with a usage error that names it.
func TestSlotsFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, service.DefaultSlots},
		{[]string{"-slots", "0"}, 0},
		{[]string{"-slots", "7"}, 7},
		{[]string{"-slots", strconv.Itoa(service.MaxSlots)}, service.MaxSlots},
	} {
		var stderr bytes.Buffer
		o, err := parseFlags(tc.args, &stderr)
		if err != nil || o.slots != tc.want {
			t.Errorf("%q: slots %d, error %v, want %d and no error\n%s", tc.args, o.slots, err, tc.want, stderr.String())
		}
	}
	for _, n := range []string{"-1", "-9223372036854775808", strconv.Itoa(service.MaxSlots + 1), "9223372036854775807"} {
		var stderr bytes.Buffer
		_, err := parseFlags([]string{"-slots", n}, &stderr)
		if err == nil || errors.Is(err, flag.ErrHelp) || !strings.Contains(err.Error(), "-slots "+n) {
			t.Errorf("-slots %s: error %v, want one that names -slots %s", n, err, n)
		}
		if !strings.Contains(stderr.String(), "Usage of server") {
			t.Errorf("-slots %s: stderr %q holds no usage", n, stderr.String())
		}
	}
}

// TestDrainFlag: -drain takes a duration of 0 or more, 0 by default, and
// refuses a negative one with a usage error.
func TestDrainFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{nil, 0},
		{[]string{"-drain", "5s"}, 5 * time.Second},
	} {
		var stderr bytes.Buffer
		o, err := parseFlags(tc.args, &stderr)
		if err != nil || o.drain != tc.want {
			t.Errorf("%q: drain %v, error %v, want %v and no error", tc.args, o.drain, err, tc.want)
		}
	}
	var stderr bytes.Buffer
	if _, err := parseFlags([]string{"-drain", "-1s"}, &stderr); err == nil || !strings.Contains(err.Error(), "-drain -1s") {
		t.Errorf("-drain -1s: error %v, want one that names it", err)
	}
}

// TestArgumentsRefused: an argument after the flags, such as an address
// given without -addr, is refused with a usage error that names it,
// rather than dropped while the server serves on its default address.
func TestArgumentsRefused(t *testing.T) {
	for _, args := range [][]string{{":9090"}, {"-slots", "8", "host"}, {"-debug", "--", "-addr"}} {
		var stderr bytes.Buffer
		_, err := parseFlags(args, &stderr)
		if err == nil || errors.Is(err, flag.ErrHelp) || !strings.Contains(err.Error(), strconv.Quote(args[len(args)-1])) {
			t.Errorf("%q: error %v, want one that names %q", args, err, args[len(args)-1])
		}
		if !strings.Contains(stderr.String(), "Usage of server") {
			t.Errorf("%q: stderr %q holds no usage", args, stderr.String())
		}
	}
}
