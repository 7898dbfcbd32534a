package device

import (
	"strings"
	"testing"
)

func TestMisfit32(t *testing.T) {
	for _, c := range []struct {
		name               string
		at, rowBytes, rows uint64
		pitch              uint64
		want               string // "" for none
	}{
		{"fits", 0x1000, 64, 4, 128, ""},
		{"one row of any pitch", 0x1004, 8, 1, 3, ""},
		{"no rows", 0x1000, 0, 0, 0, ""},
		{"an address 2 past a multiple of 4", 0x1002, 8, 1, 8, "address 0x1002"},
		{"rows of 6 bytes", 0x1000, 6, 2, 8, "rows of 6 bytes"},
		{"rows 10 bytes apart", 0x1000, 8, 2, 10, "rows 10 bytes apart"},
	} {
		p := Part{Kind: CopyRows, Filling: true, Fill32: true, RowBytes: c.rowBytes, Rows: c.rows, DstPitch: c.pitch}
		got := p.Misfit32(c.at)
		if (got == "") != (c.want == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
