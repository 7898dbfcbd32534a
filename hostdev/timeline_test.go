package hostdev

import (
	"strings"
	"testing"
)

// TestTimeline: the host's timelines are devices of their own names,
// "host" the first, as Default's, and a negative number panics naming it.
func TestTimeline(t *testing.T) {
	for k, want := range []string{"host", "host/1", "host/2"} {
		o := Timeline(k)
		if o.Name != want || Name(k) != want {
			t.Errorf("Timeline(%d) is named %q, Name(%d) %q; want %q", k, o.Name, k, Name(k), want)
		}
		drv, err := o.Make(new(uint64))
		if err != nil {
			t.Fatal(err)
		}
		drv.Stop("")
	}
	if Default().Name != Timeline(0).Name {
		t.Errorf("Default is %q, Timeline(0) %q", Default().Name, Timeline(0).Name)
	}
	defer func() {
		if v := recover(); v == nil || !strings.Contains(v.(string), "Timeline(-1)") {
			t.Errorf("Timeline(-1) panicked with %v", v)
		}
	}()
	Timeline(-1)
}
