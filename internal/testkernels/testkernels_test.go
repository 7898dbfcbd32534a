package testkernels

import (
	"bytes"
	"regexp"
	"slices"
	"testing"
)

// kernelNames are the kernels a CUDA source defines.
func kernelNames(src []byte) []string {
	var names []string
	for _, m := range regexp.MustCompile(`__global__ void (\w+)\(`).FindAllSubmatch(src, -1) {
		names = append(names, string(m[1]))
	}
	return names
}

// TestImagesHoldTheirSourcesKernels checks that each embedded image is
// what its name says and defines every kernel of its source, so that an
// image left behind by an edit of a source fails here.
func TestImagesHoldTheirSourcesKernels(t *testing.T) {
	all := kernelNames(Source())
	nv := slices.DeleteFunc(slices.Clone(all), func(k string) bool { return k == "uses_printf" || k == "uses_assert" })
	if len(all) < 10 || len(nv) != len(all)-2 {
		t.Fatalf("kernels.cu defines %d kernels (%v), want uses_printf and uses_assert among them", len(all), all)
	}
	type image struct {
		name  string
		b     []byte
		magic string
		want  []string
	}
	var images []image
	for _, a := range Archs {
		b, ok := Cubin(a)
		if !ok {
			t.Fatalf("Cubin(%q) = false", a)
		}
		images = append(images, image{"kernels." + a + ".cubin", b, "\x7fELF", all})
	}
	for _, a := range NVArchs {
		b, ok := NVCubin(a)
		if !ok {
			t.Fatalf("NVCubin(%q) = false", a)
		}
		images = append(images, image{"kernels_nv." + a + ".cubin", b, "\x7fELF", nv})
	}
	images = append(images,
		image{"kernels.compute_90.ptx", PTX(), "//", all},
		image{"kernels.fatbin", Fatbin(), "\x50\xed\x55\xba", nil},
		image{"portable.ptx", Portable(), "//", []string{"empty", "twice"}},
		image{"spin.ptx", Spin(), "//", []string{"spin_ns"}},
	)
	for _, im := range images {
		if !bytes.HasPrefix(im.b, []byte(im.magic)) {
			t.Errorf("%s starts % x, want % x", im.name, im.b[:min(4, len(im.b))], im.magic)
		}
		for _, k := range im.want {
			if !bytes.Contains(im.b, []byte(k+"\x00")) && !bytes.Contains(im.b, []byte(".entry "+k+"(")) {
				t.Errorf("%s does not define %s", im.name, k)
			}
		}
	}
	for _, k := range []string{"vprintf", "__assertfail", "uses_printf", "uses_assert"} {
		if b, _ := NVCubin("sm_90"); bytes.Contains(b, []byte(k)) {
			t.Errorf("kernels_nv.sm_90.cubin names %s", k)
		}
	}
}

// TestImageFallsBackToPTX checks that an architecture with no cubin gets
// the PTX, and one with a cubin gets it.
func TestImageFallsBackToPTX(t *testing.T) {
	for _, c := range []struct {
		arch string
		want []byte
	}{
		{"sm_90", sm90},
		{"sm_80", sm80},
		{"sm_100", ptx},
		{"", ptx},
	} {
		if got := Image(c.arch); !bytes.Equal(got, c.want) {
			t.Errorf("Image(%q) is %d bytes, want %d", c.arch, len(got), len(c.want))
		}
	}
	if _, ok := Cubin("sm_75"); ok {
		t.Error("Cubin(sm_75) = true")
	}
	if _, ok := NVCubin("sm_80"); ok {
		t.Error("NVCubin(sm_80) = true")
	}
}

// TestCopiesAreTheCallers checks that changing a returned image leaves the
// next caller's intact.
func TestCopiesAreTheCallers(t *testing.T) {
	b, _ := Cubin("sm_90")
	b[0] = 0
	if c, _ := Cubin("sm_90"); c[0] != 0x7f {
		t.Fatal("a change to Cubin's result reached the next call")
	}
	p := PTX()
	p[0] = 0
	if PTX()[0] == 0 {
		t.Fatal("a change to PTX's result reached the next call")
	}
	if !bytes.Contains(BuildScript(), []byte("nvcc")) {
		t.Error("build.sh does not run nvcc")
	}
}
