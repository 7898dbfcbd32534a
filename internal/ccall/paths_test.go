package ccall

import (
	"go/build"
	"slices"
	"testing"
)

// TestCallPaths checks which file makes the call on each platform: the
// System V assembly on amd64 but for Windows, whose C functions take
// their arguments in other registers, and purego elsewhere.
func TestCallPaths(t *testing.T) {
	for _, c := range []struct {
		goos, goarch string
		asm          bool
	}{
		{"linux", "amd64", true},
		{"darwin", "amd64", true},
		{"windows", "amd64", false},
		{"windows", "386", false},
		{"windows", "arm64", false},
		{"linux", "arm64", false},
		{"linux", "386", false},
		{"linux", "arm", false},
		{"darwin", "arm64", false},
	} {
		ctx := build.Default
		ctx.GOOS, ctx.GOARCH, ctx.CgoEnabled = c.goos, c.goarch, false
		p, err := ctx.ImportDir(".", 0)
		if err != nil {
			t.Fatalf("%s/%s: %v", c.goos, c.goarch, err)
		}
		asm := slices.Contains(p.SFiles, "call_amd64.s") && slices.Contains(p.GoFiles, "call_amd64.go")
		other := slices.Contains(p.GoFiles, "call_other.go")
		if asm != c.asm || other == c.asm {
			t.Errorf("%s/%s builds %v and %v: want the System V assembly %v, purego %v", c.goos, c.goarch, p.GoFiles, p.SFiles, c.asm, !c.asm)
		}
	}
}
