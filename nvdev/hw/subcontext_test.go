package hw

import (
	"slices"
	"testing"
)

func TestSubcontextGolden(t *testing.T) {
	const addr, v = 0x0000_0123_4567_89a8, 0x1122_3344_5566_7788
	for _, tc := range []struct {
		name      string
		got, want []uint32
		most      int
	}{
		{"wait for idle of the subcontext", WaitForIdleSubcontext(nil), []uint32{0x2001001e, 0}, 2},
		{"wait for idle of every subcontext", WaitForIdle(nil), []uint32{0x2001001e, 1}, 2},
		{"release of the subcontext", SubcontextRelease(nil, Hopper, addr, v),
			[]uint32{0x20050017, 0x456789a8, 0x123, 0x55667788, 0x11223344, 0x01000001}, ReleaseWords},
		{"stamped release of the subcontext", SubcontextReleaseStamp(nil, Hopper, addr, v),
			[]uint32{0x20050017, 0x456789a8, 0x123, 0x55667788, 0x11223344, 0x03000001}, ReleaseWords},
		{"acquire that yields the group", AcquireYield(nil, Hopper, addr, v),
			[]uint32{0x20050017, 0x456789a8, 0x123, 0x55667788, 0x11223344, 0x01001003}, AcquireWords},
		{"the PBDMA to the group's next channel", YieldChannel(nil), []uint32{0x20010020, 3}, 2},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s:\n got %#08x\nwant %#08x", tc.name, tc.got, tc.want)
		}
		if len(tc.got) > tc.most {
			t.Errorf("%s: %d words, more than %d", tc.name, len(tc.got), tc.most)
		}
	}
}
