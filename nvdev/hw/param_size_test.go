package hw

import (
	"debug/elf"
	"errors"
	"testing"
)

// paramCubin is a cubin of one kernel k whose constant bank 0 holds 0x300
// bytes, with 0x20 bytes of parameters at 0x210, and one parameter stated
// by EIATTR_KPARAM_INFO_V2 at offset off of size bytes.
func paramCubin(off uint16, size uint32) []byte {
	cbank := make([]byte, 12)
	le.PutUint32(cbank[4:], 0x20<<16|0x210)
	kparam := make([]byte, 12)
	le.PutUint16(kparam[6:], off)
	le.PutUint32(kparam[8:], size)
	var info []byte
	for _, a := range []struct {
		attr uint8
		data []byte
	}{{AttrParamCbank, cbank}, {AttrKParamInfoV2, kparam}} {
		info = append(info, eifmtSVAL, a.attr, byte(len(a.data)), byte(len(a.data)>>8))
		info = append(info, a.data...)
	}
	return hostileCubin(kernels(1, func(int) uint32 { return 1 }), []byte("\x00k\x00"),
		hsec{name: ".nv.constant0.k", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC, data: make([]byte, 0x300), align: 4},
		hsec{name: ".nv.info.k", typ: shtCUDAInfo, data: info, align: 4})
}

// TestParamSizePastInt: a parameter's size of EIATTR_KPARAM_INFO_V2 is a
// 32-bit word, which past 2^31 an int of 32 bits does not hold; such a
// parameter lies past the kernel's parameter bytes on every architecture.
func TestParamSizePastInt(t *testing.T) {
	c, err := Parse(paramCubin(8, 8))
	if err != nil {
		t.Fatalf("a parameter within the parameter bytes: %v", err)
	}
	if k, _ := c.Kernel("k"); len(k.Params) != 1 || k.Params[0] != (Param{Offset: 8, Size: 8}) {
		t.Fatalf("parameters %v", k.Params)
	}
	for _, size := range []uint32{0x19, 1<<31 - 8, 1 << 31, 1<<32 - 8, 1<<32 - 1} {
		c, err := Parse(paramCubin(8, size))
		if !errors.Is(err, ErrMalformed) {
			var params []Param
			if c != nil {
				k, _ := c.Kernel("k")
				params = k.Params
			}
			t.Errorf("a parameter of %#x bytes at 8: %v, parameters %v", size, err, params)
		}
	}
}
