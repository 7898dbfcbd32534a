package nvdev

import (
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/hw"
)

// TestParamLayout: the entries' layouts are the cubin's parameter
// attributes in the order of the kernels' signatures.
func TestParamLayout(t *testing.T) {
	c, err := hw.Parse(cubin(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kernel string
		want   []device.Param
	}{
		{"empty", []device.Param{}},
		{"twice", []device.Param{{Offset: 0, Size: 8}}},
		{"saxpy", []device.Param{{Offset: 0, Size: 4}, {Offset: 4, Size: 4}, {Offset: 8, Size: 8}, {Offset: 16, Size: 8}}},
		{"mixed", []device.Param{{Offset: 0, Size: 1}, {Offset: 2, Size: 2}, {Offset: 8, Size: 8}, {Offset: 16, Size: 8}, {Offset: 24, Size: 8}}},
		{"params4000", []device.Param{{Offset: 0, Size: 4000}, {Offset: 4000, Size: 8}}},
	} {
		k, ok := c.Kernel(tc.kernel)
		if !ok {
			t.Fatalf("no kernel %q", tc.kernel)
		}
		got := paramLayout(k)
		if len(got) != len(tc.want) {
			t.Fatalf("%s: layout %v, want %v", tc.kernel, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("%s: layout %v, want %v", tc.kernel, got, tc.want)
			}
		}
	}
	k, _ := c.Kernel("saxpy")
	bad := *k
	bad.Params = append([]hw.Param(nil), k.Params...)
	bad.Params[0].Ordinal = 1
	if paramLayout(&bad) != nil {
		t.Fatal("a layout of two parameters in one place")
	}
	bad.Params[0].Ordinal, bad.Params[0].Offset = 0, k.ParamBytes
	if paramLayout(&bad) != nil {
		t.Fatal("a layout of a parameter past the parameter bytes")
	}
}
