package hw

import "fmt"

// The .nv.info sections hold a cubin's attributes (EIATTR_*): the image's
// in .nv.info, each record naming its function by symbol, and each
// kernel's in .nv.info.<kernel>. A record is a format byte, an attribute
// byte and a 16-bit size; its value follows in size bytes for the format
// EIFMT_SVAL, and is the 16-bit size itself otherwise. The attribute and
// format numbers are those cuobjdump -elf prints.

// Attribute formats (EIFMT_*).
const (
	eifmtNVAL = 1 // no value
	eifmtBVAL = 2 // a byte, in the size field
	eifmtHVAL = 3 // a half word, in the size field
	eifmtSVAL = 4 // size bytes that follow
)

// Attributes (EIATTR_*) the loader reads.
const (
	AttrMaxThreads      = 0x05 // EIATTR_MAX_THREADS: x, y, z
	AttrParamCbank      = 0x0a // EIATTR_PARAM_CBANK: symbol, offset, size
	AttrExterns         = 0x0f // EIATTR_EXTERNS: symbols
	AttrReqNTid         = 0x10 // EIATTR_REQNTID: x, y, z
	AttrFrameSize       = 0x11 // EIATTR_FRAME_SIZE: symbol, bytes
	AttrMinStackSize    = 0x12 // EIATTR_MIN_STACK_SIZE: symbol, bytes
	AttrKParamInfo      = 0x17 // EIATTR_KPARAM_INFO: one parameter
	AttrCbankParamSize  = 0x19 // EIATTR_CBANK_PARAM_SIZE: bytes
	AttrMaxRegCount     = 0x1b // EIATTR_MAXREG_COUNT
	AttrCrsStackSize    = 0x1e // EIATTR_CRS_STACK_SIZE: bytes
	AttrMaxStackSize    = 0x23 // EIATTR_MAX_STACK_SIZE: symbol, bytes
	AttrRegCount        = 0x2f // EIATTR_REGCOUNT: symbol, registers
	AttrSW2861232WAR    = 0x35 // EIATTR_SW2861232_WAR
	AttrSWWAR           = 0x36 // EIATTR_SW_WAR: flags
	AttrCudaAPIVersion  = 0x37 // EIATTR_CUDA_API_VERSION
	AttrCtaPerCluster   = 0x3d // EIATTR_CTA_PER_CLUSTER: x, y, z
	AttrExplicitCluster = 0x3e // EIATTR_EXPLICIT_CLUSTER
	AttrMaxClusterRank  = 0x3f // EIATTR_MAX_CLUSTER_RANK
	AttrKParamInfoV2    = 0x45 // EIATTR_KPARAM_INFO_V2: one parameter
	AttrNumBarriers     = 0x4c // EIATTR_NUM_BARRIERS
)

// Attribute is one .nv.info record.
type Attribute struct {
	Format, Attr uint8
	// Value is the record's value where the format holds it in the header
	// (NVAL, BVAL, HVAL).
	Value uint16
	// Data is the record's bytes (SVAL).
	Data []byte
}

// u32 is the i-th 32-bit word of the record's data, and whether it has it.
func (a Attribute) u32(i int) (uint32, bool) {
	if 4*i+4 > len(a.Data) {
		return 0, false
	}
	return le.Uint32(a.Data[4*i:]), true
}

// parseInfo splits an .nv.info section into its records.
func parseInfo(name string, b []byte) ([]Attribute, error) {
	var out []Attribute
	for off := 0; off < len(b); {
		if len(b)-off < 4 {
			return nil, malformed("%s: record header cut at byte %d", name, off)
		}
		a := Attribute{Format: b[off], Attr: b[off+1], Value: le.Uint16(b[off+2:])}
		off += 4
		switch a.Format {
		case eifmtNVAL, eifmtBVAL, eifmtHVAL:
		case eifmtSVAL:
			n := int(a.Value)
			if n > len(b)-off {
				return nil, malformed("%s: attribute %#x of %d bytes past the section's end", name, a.Attr, n)
			}
			a.Data, a.Value = b[off:off+n], 0
			off += n
		default:
			return nil, malformed("%s: attribute %#x of format %d", name, a.Attr, a.Format)
		}
		out = append(out, a)
	}
	return out, nil
}

// Param is one parameter of a kernel (EIATTR_KPARAM_INFO).
type Param struct {
	// Ordinal is the parameter's place in the kernel's signature.
	Ordinal int
	// Offset is its offset from the start of the parameters.
	Offset int
	// Size is its size in bytes.
	Size int
}

// kernelInfo applies kernel k's own attributes (.nv.info.<k>) to k.
func (c *Cubin) kernelInfo(f *elfFile, k *Kernel, attrs []Attribute) error {
	for _, a := range attrs {
		switch a.Attr {
		case AttrParamCbank:
			_, ok1 := a.u32(0)
			w, ok2 := a.u32(1)
			if !ok1 || !ok2 {
				return malformed("%s: EIATTR_PARAM_CBANK of %d bytes", k.Name, len(a.Data))
			}
			k.ParamOffset, k.ParamBytes = int(w&0xffff), int(w>>16)
			k.hasParamCbank = true
		case AttrCbankParamSize:
			if a.Format != eifmtHVAL {
				return malformed("%s: EIATTR_CBANK_PARAM_SIZE of format %d", k.Name, a.Format)
			}
			k.cbankParamSize = int(a.Value)
		case AttrKParamInfo, AttrKParamInfoV2:
			if len(a.Data) < 12 {
				return malformed("%s: parameter information of %d bytes", k.Name, len(a.Data))
			}
			p := Param{Ordinal: int(le.Uint16(a.Data[4:])), Offset: int(le.Uint16(a.Data[6:]))}
			w := le.Uint32(a.Data[8:])
			if a.Attr == AttrKParamInfo {
				p.Size = int(w >> 18)
			} else {
				p.Size = int(w)
			}
			k.Params = append(k.Params, p)
		case AttrNumBarriers:
			k.Barriers = int(a.Value)
			if a.Format == eifmtSVAL {
				v, _ := a.u32(0)
				k.Barriers = int(v)
			}
		case AttrMaxRegCount:
			k.MaxRegisters = int(a.Value)
		case AttrCrsStackSize:
			v, _ := a.u32(0)
			k.CRSStack = int(v)
		case AttrMaxThreads:
			k.MaxThreadsAttr = triple(a)
		case AttrReqNTid:
			k.ReqThreads = triple(a)
		case AttrCtaPerCluster:
			k.ClusterDims = triple(a)
		case AttrExplicitCluster:
			k.ExplicitCluster = true
		case AttrMaxClusterRank:
			k.MaxClusterRank = int(a.Value)
			if a.Format == eifmtSVAL {
				v, _ := a.u32(0)
				k.MaxClusterRank = int(v)
			}
		case AttrSWWAR:
			v, _ := a.u32(0)
			k.SWWar = v
		case AttrExterns:
			for i := 0; ; i++ {
				s, ok := a.u32(i)
				if !ok {
					break
				}
				// Compared as 64-bit numbers: an int of 32 bits holds an
				// index past 2^31 as a negative number.
				if uint64(s) >= uint64(len(f.symbols)) {
					return malformed("%s: extern symbol %d of %d", k.Name, s, len(f.symbols))
				}
				k.Externs = append(k.Externs, f.symbols[s].name)
				if f.symbols[s].shndx == 0 {
					c.undefSyms[s] = true
				}
			}
		}
	}
	return nil
}

func triple(a Attribute) [3]int {
	var t [3]int
	for i := range t {
		v, _ := a.u32(i)
		t[i] = int(v)
	}
	return t
}

// imageInfo applies the image's attributes (.nv.info), which name their
// kernel by symbol, to the kernels.
func (c *Cubin) imageInfo(f *elfFile, attrs []Attribute) error {
	for _, a := range attrs {
		switch a.Attr {
		case AttrRegCount, AttrFrameSize, AttrMinStackSize, AttrMaxStackSize:
		default:
			continue
		}
		sym, ok1 := a.u32(0)
		v, ok2 := a.u32(1)
		if !ok1 || !ok2 {
			return malformed(".nv.info: attribute %#x of %d bytes", a.Attr, len(a.Data))
		}
		if uint64(sym) >= uint64(len(f.symbols)) {
			return malformed(".nv.info: attribute %#x of symbol %d of %d", a.Attr, sym, len(f.symbols))
		}
		k := c.bySymbol[int(sym)]
		if k == nil {
			continue // a device function's
		}
		switch a.Attr {
		case AttrRegCount:
			k.Registers = int(v)
		case AttrFrameSize:
			k.FrameSize = int(v)
		case AttrMinStackSize:
			k.MinStack = int(v)
		case AttrMaxStackSize:
			k.MaxStack = int(v)
		}
	}
	return nil
}

// checkParams checks what the attributes say of k's parameters against
// its constant bank 0.
func (k *Kernel) checkParams() error {
	if !k.hasParamCbank {
		k.ParamOffset, k.ParamBytes = k.Bank0Bytes, 0
		return nil
	}
	if k.cbankParamSize != 0 && k.cbankParamSize != k.ParamBytes {
		return malformed("%s: EIATTR_CBANK_PARAM_SIZE %d, EIATTR_PARAM_CBANK %d", k.Name, k.cbankParamSize, k.ParamBytes)
	}
	if k.ParamOffset+k.ParamBytes > k.Bank0Bytes {
		return malformed("%s: parameters at %#x of %d bytes past constant bank 0 of %d bytes",
			k.Name, k.ParamOffset, k.ParamBytes, k.Bank0Bytes)
	}
	for _, p := range k.Params {
		// A size of EIATTR_KPARAM_INFO_V2 is a 32-bit word, which an int
		// of 32 bits holds as a negative number past 2^31: the bound is
		// taken so that no sum of it can wrap.
		if p.Size < 0 || p.Offset < 0 || p.Size > k.ParamBytes-p.Offset {
			return malformed("%s: parameter %d at %d of %d bytes past the %d parameter bytes",
				k.Name, p.Ordinal, p.Offset, p.Size, k.ParamBytes)
		}
	}
	return nil
}

// String returns the parameter as #ordinal@offset:size.
func (p Param) String() string { return fmt.Sprintf("#%d@%d:%d", p.Ordinal, p.Offset, p.Size) }
