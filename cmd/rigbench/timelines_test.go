package main

import (
	"context"
	"errors"
	"io"
	"testing"
)

func TestTimelinesFlag(t *testing.T) {
	c, err := parseFlags([]string{"-timelines", "4", "-device", "nv:1"}, io.Discard)
	if err != nil || c.Timelines != 4 {
		t.Fatalf("-timelines 4: %+v, %v", c, err)
	}
	for _, bad := range []string{"-1", "65", "x"} {
		var ue *usageError
		if _, err := parseFlags([]string{"-timelines", bad}, io.Discard); !errors.As(err, &ue) {
			t.Errorf("-timelines %s: %v, want a usage error", bad, err)
		}
	}
	for s, want := range map[spec]string{
		{Driver: "nv", Index: 0, Timeline: 2}: "nv:0/2", {Driver: "host", Timeline: 1}: "host/1",
		{Driver: "cuda", Index: 1}: "cuda:1", {Driver: "host", Index: 2, Timeline: 3}: "host:2/3",
	} {
		if got := s.String(); got != want {
			t.Errorf("%#v prints %q, want %q", s, got, want)
		}
	}
}

// TestRunTimelines runs the workload over three timelines of the host
// device, two submitters each: the report gives each device's figures,
// which add up to the aggregate.
func TestRunTimelines(t *testing.T) {
	r := runJSON(t, context.Background(), "-device", "host", "-timelines", "3", "-c", "2", "-duration", "300ms")
	if len(r.Devices) != 3 || r.Devices[1].Spec != "host/1" || r.Devices[2].Spec != "host/2" {
		t.Fatalf("devices %+v", r.Devices)
	}
	if len(r.PerDevice) != 3 {
		t.Fatalf("per device: %+v", r.PerDevice)
	}
	var sum int64
	for i, d := range r.PerDevice {
		if d.Device != r.Devices[i].Name || d.Latency.Count != d.Submissions {
			t.Errorf("device %+v", d)
		}
		sum += d.Submissions
	}
	if sum != r.Rig.Submissions || sum == 0 {
		t.Errorf("the devices' submissions add up to %d, the run's are %d", sum, r.Rig.Submissions)
	}
	one := runJSON(t, context.Background(), "-device", "host", "-n", "100")
	if one.PerDevice != nil {
		t.Errorf("a run of one device reports per device: %+v", one.PerDevice)
	}
}
