package hw

import (
	"bytes"
	"debug/elf"
	"slices"
	"strconv"
	"strings"
)

// A cubin is the ELF file nvcc writes for one architecture (nvcc -cubin,
// ET_EXEC, EM_CUDA). The loader lays the sections the GPU reads into one
// image: each kernel's code (.text.<kernel>), the constant banks other
// than 0 (.nv.constantN and .nv.constantN.<kernel>), and the global data
// (.nv.global.init, and .nv.global zeroed); it relocates the image for the
// address it is placed at. Constant bank 0 (.nv.constant0.<kernel>) is not
// laid: each launch stamps its own from the kernel's (Launch). Shared and
// local memory (.nv.shared.*, .nv.local.*) are not laid either: the
// descriptor sizes them.

// MaxImage bounds the size of an image: a larger one is refused.
const MaxImage = 1 << 36

// MaxZeroed bounds the bytes of an image that its file does not hold: the
// sections of zeroes (SHT_NOBITS, such as .nv.global) and the padding that
// aligns sections. Laying an image takes its whole size on the host, so
// that a small file asking for more is refused; the bytes the file holds
// are bounded by the file's size.
const MaxZeroed = 1 << 28

// PrefetchSlack is the bytes an image keeps past its last section, so that
// the engine's instruction prefetch past a kernel's last instruction reads
// memory that is mapped.
const PrefetchSlack = 4096

// Cubin is a parsed cubin: its image layout, its kernels and its
// relocations. It is read-only once made, and any goroutine may use it.
type Cubin struct {
	sm        int
	data      []byte
	sections  []Section
	laid      []*elfSection
	symbols   []Symbol
	kernels   []*Kernel
	byName    map[string]*Kernel
	bySymbol  map[int]*Kernel // by the index of its symbol
	undefSyms []bool          // by symbol: an undefined symbol the image refers to
	relocs    []Reloc
	undefined map[string]bool
	size      uint64
	align     uint64
}

// Section is a section of a cubin, and where the image holds it.
type Section struct {
	Name  string
	Index int
	// Type and Flags are the section's sh_type and sh_flags.
	Type  elf.SectionType
	Flags elf.SectionFlag
	// Size is the section's size in bytes.
	Size uint64
	// Laid is true where the image holds the section, at Offset from its
	// start.
	Laid   bool
	Offset uint64
}

// Symbol is a symbol of a cubin.
type Symbol struct {
	Name string
	// Section is the index of the section that defines it; 0 if it is
	// undefined.
	Section int
	Value   uint64
	Size    uint64
	Type    elf.SymType
	Bind    elf.SymBind
	// Entry is true for a kernel.
	Entry bool
}

// Bank is a constant bank a kernel's launches bind.
type Bank struct {
	// Index is the bank's number, 1 to 7.
	Index int
	// Offset is where the image holds it.
	Offset uint64
	// Size is its size in bytes.
	Size uint32
}

// Kernel is one kernel (an entry point) of a cubin: what a launch of it
// needs to know.
type Kernel struct {
	Name string
	// SM is the architecture of its code, major*10 + minor.
	SM int
	// Code is the offset of its first instruction in the image, and
	// CodeBytes the size of its code.
	Code, CodeBytes uint64
	// Registers is the registers of a thread (EIATTR_REGCOUNT).
	Registers int
	// MaxRegisters is the compiler's bound on them (EIATTR_MAXREG_COUNT).
	MaxRegisters int
	// Barriers is the named barriers a group uses (EIATTR_NUM_BARRIERS).
	Barriers int
	// ParamOffset is where its parameters start in constant bank 0, and
	// ParamBytes their size (EIATTR_PARAM_CBANK). Without parameters,
	// ParamOffset is Bank0Bytes.
	ParamOffset, ParamBytes int
	// Params describes each parameter (EIATTR_KPARAM_INFO), in the order
	// of the attributes.
	Params []Param
	// Bank0Bytes is the size of its constant bank 0: the driver's words,
	// then its parameters (.nv.constant0.<kernel>).
	Bank0Bytes int
	// Bank0 is the bank's initial bytes.
	Bank0 []byte
	// Banks are the other constant banks its launches bind.
	Banks []Bank
	// Shared is the static shared memory of a group, in bytes
	// (.nv.shared.<kernel>); on sm_90 it counts the system's reserved KiB.
	Shared int
	// FrameSize, MinStack and MaxStack are the stack attributes
	// (EIATTR_FRAME_SIZE, _MIN_STACK_SIZE, _MAX_STACK_SIZE), and CRSStack
	// the call-return stack (EIATTR_CRS_STACK_SIZE), in bytes per thread.
	FrameSize, MinStack, MaxStack, CRSStack int
	// MaxThreadsAttr and ReqThreads are the launch bounds
	// (EIATTR_MAX_THREADS, EIATTR_REQNTID), zero where absent.
	MaxThreadsAttr, ReqThreads [3]int
	// ClusterDims is the cluster shape (EIATTR_CTA_PER_CLUSTER), zero where
	// absent; ExplicitCluster is EIATTR_EXPLICIT_CLUSTER and
	// MaxClusterRank EIATTR_MAX_CLUSTER_RANK.
	ClusterDims     [3]int
	ExplicitCluster bool
	MaxClusterRank  int
	// SWWar is the workarounds word nvcc asks the driver for
	// (EIATTR_SW_WAR); this loader applies none.
	SWWar uint32
	// Externs names the symbols the kernel calls that its image must
	// provide (EIATTR_EXTERNS).
	Externs []string

	hasParamCbank  bool
	cbankParamSize int
}

// Stack is the stack of a thread, in bytes: the largest of its stack
// attributes.
func (k *Kernel) Stack() int { return max(k.MinStack, k.MaxStack, k.FrameSize) }

// Parse reads a cubin for sm_80, sm_86, sm_89 or sm_90 and lays out its
// image. It refuses a binary that is not such a cubin, a relocation it does
// not apply (RelocationError), and an image that refers to a symbol it
// does not define (UndefinedError), such as vprintf or __assertfail, even
// where no kernel to be launched calls it. Whatever its input, it returns
// an error rather than panic, and what it allocates and does is in
// proportion to the input's size: it refuses, wrapping ErrMalformed,
// sections whose bytes add up to more than the file's, names that add up
// to more, and an image of more than MaxZeroed bytes the file does not
// hold.
func Parse(b []byte) (*Cubin, error) {
	c, err := Inspect(b)
	if err != nil {
		return nil, err
	}
	if err := c.checkDefined(); err != nil {
		return nil, err
	}
	return c, nil
}

// Inspect reads a cubin as Parse does, but keeps one that refers to
// symbols it does not define, so that tools may list its kernels; such a
// cubin's Lay refuses it as Parse would.
func Inspect(b []byte) (*Cubin, error) {
	data := bytes.Clone(b)
	f, err := readELF(data)
	if err != nil {
		return nil, err
	}
	if elf.Type(f.typ) != elf.ET_EXEC {
		return nil, malformed("ELF type %v: a relocatable object is for nvlink, not for loading", elf.Type(f.typ))
	}
	c := &Cubin{
		sm: f.sm(), data: data,
		byName: map[string]*Kernel{}, bySymbol: map[int]*Kernel{}, undefined: map[string]bool{},
	}
	if !slices.ContainsFunc(generations, func(g *Generation) bool { return g.Runs(c.sm) }) {
		return nil, &archError{c.sm}
	}
	if err := c.layout(f); err != nil {
		return nil, err
	}
	c.readSymbols(f)
	c.undefSyms = make([]bool, len(f.symbols))
	if err := c.readKernels(f); err != nil {
		return nil, err
	}
	if err := c.readRelocations(f); err != nil {
		return nil, err
	}
	for i, u := range c.undefSyms {
		if u {
			c.undefined[f.symbols[i].name] = true
		}
	}
	c.undefSyms = nil
	return c, nil
}

type archError struct{ sm int }

func (e *archError) Error() string {
	return "cubin for sm_" + strconv.Itoa(e.sm) + ": " + ErrArch.Error()
}
func (e *archError) Unwrap() error { return ErrArch }

// bankOf is the constant bank of a section named .nv.constantN or
// .nv.constantN.<kernel>, and the kernel's name, or -1.
func bankOf(name string) (bank int, kernel string) {
	rest, ok := strings.CutPrefix(name, ".nv.constant")
	if !ok {
		return -1, ""
	}
	digits, kernel, _ := strings.Cut(rest, ".")
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 || n > 31 || digits != strconv.Itoa(n) {
		return -1, ""
	}
	return n, kernel
}

// laidInImage reports whether the image holds section s.
func laidInImage(s *elfSection) bool {
	t := elf.SectionType(s.typ)
	if elf.SectionFlag(s.flags)&elf.SHF_ALLOC == 0 || (t != elf.SHT_PROGBITS && t != elf.SHT_NOBITS) {
		return false
	}
	if strings.HasPrefix(s.name, ".nv.shared.") || strings.HasPrefix(s.name, ".nv.local.") {
		return false
	}
	if bank, _ := bankOf(s.name); bank == 0 {
		return false
	}
	return true
}

// layout places the sections the image holds: code first, so that a
// prefetch past a kernel's end reads the image's data, then the constant
// banks, aligned to 256 bytes, then the rest.
func (c *Cubin) layout(f *elfFile) error {
	var order []*elfSection
	for pass := range 3 {
		for _, s := range f.sections {
			if !laidInImage(s) {
				continue
			}
			bank, _ := bankOf(s.name)
			code := elf.SectionFlag(s.flags)&elf.SHF_EXECINSTR != 0
			if (pass == 0) == code && (pass == 1) == (bank > 0) {
				order = append(order, s)
			}
		}
	}
	off, align := uint64(0), uint64(256)
	placed := make([]uint64, len(f.sections))
	laid := make([]bool, len(f.sections))
	var zeroed uint64 // the bytes of the image the file does not hold
	for _, s := range order {
		a := max(s.align, 128)
		if bank, _ := bankOf(s.name); bank > 0 {
			a = max(a, 256)
		}
		if a&(a-1) != 0 || a > 1<<16 {
			return malformed("section %s aligned to %d", s.name, s.align)
		}
		align = max(align, a)
		next := (off + a - 1) &^ (a - 1)
		zeroed += next - off
		if s.data == nil {
			zeroed += min(s.size, MaxZeroed+1)
		}
		if zeroed > MaxZeroed {
			return malformed("section %s: an image of more than %d bytes of zeroes and padding", s.name, uint64(MaxZeroed))
		}
		off = next
		if s.size > MaxImage || off+s.size > MaxImage {
			return malformed("image larger than %d bytes", uint64(MaxImage))
		}
		placed[s.index], laid[s.index] = off, true
		off += s.size
	}
	c.laid = order
	c.size = (off+127)&^127 + PrefetchSlack
	c.align = align
	c.sections = make([]Section, len(f.sections))
	for i, s := range f.sections {
		c.sections[i] = Section{Name: s.name, Index: i, Type: elf.SectionType(s.typ),
			Flags: elf.SectionFlag(s.flags), Size: s.size, Laid: laid[i], Offset: placed[i]}
	}
	return nil
}

func (c *Cubin) readSymbols(f *elfFile) {
	c.symbols = make([]Symbol, len(f.symbols))
	for i, s := range f.symbols {
		c.symbols[i] = Symbol{Name: s.name, Section: int(s.shndx), Value: s.value, Size: s.size,
			Type: s.kind(), Bind: elf.SymBind(s.info >> 4),
			Entry: s.kind() == elf.STT_FUNC && s.other&stoCUDAEntry != 0 && s.shndx != 0}
	}
}

// kernelSections are the sections of each kernel (.nv.shared.<kernel>,
// .nv.constant0.<kernel>, .nv.info.<kernel>), by kernel name, made in one
// pass over the sections: the first section of each name.
type kernelSections struct {
	shared, bank0, info map[string]*elfSection
}

func kernelSectionsOf(f *elfFile) kernelSections {
	ks := kernelSections{shared: map[string]*elfSection{}, bank0: map[string]*elfSection{}, info: map[string]*elfSection{}}
	for _, s := range f.sections[1:] {
		for _, p := range [...]struct {
			prefix string
			m      map[string]*elfSection
		}{{".nv.shared.", ks.shared}, {".nv.constant0.", ks.bank0}, {".nv.info.", ks.info}} {
			if k, ok := strings.CutPrefix(s.name, p.prefix); ok {
				if p.m[k] == nil {
					p.m[k] = s
				}
				break
			}
		}
	}
	return ks
}

func (c *Cubin) readKernels(f *elfFile) error {
	ks := kernelSectionsOf(f)
	var info *elfSection // .nv.info
	for _, s := range f.sections[1:] {
		if s.name == ".nv.info" {
			info = s
			break
		}
	}
	for i, s := range f.symbols {
		if !c.symbols[i].Entry {
			continue
		}
		text := f.section(uint32(s.shndx))
		if text == nil || !c.sections[text.index].Laid || elf.SectionFlag(text.flags)&elf.SHF_EXECINSTR == 0 {
			return malformed("kernel %s outside the image's code", s.name)
		}
		if s.value > text.size {
			return malformed("kernel %s at %#x past its section of %d bytes", s.name, s.value, text.size)
		}
		if c.byName[s.name] != nil {
			return malformed("two kernels named %s", s.name)
		}
		k := &Kernel{
			Name: s.name, SM: c.sm,
			Code:      c.sections[text.index].Offset + s.value,
			CodeBytes: text.size - s.value,
		}
		if s.size != 0 && s.size <= text.size-s.value {
			k.CodeBytes = s.size
		}
		if sh := ks.shared[s.name]; sh != nil {
			if sh.size > 1<<31 {
				return malformed("%s: shared memory of %d bytes", s.name, sh.size)
			}
			k.Shared = int(sh.size)
		}
		if cb := ks.bank0[s.name]; cb != nil {
			if cb.size > 1<<20 || cb.data == nil {
				return malformed("%s: constant bank 0 of %d bytes", s.name, cb.size)
			}
			k.Bank0Bytes, k.Bank0 = int(cb.size), cb.data
		}
		c.kernels = append(c.kernels, k)
		c.byName[s.name] = k
		c.bySymbol[i] = k
	}
	if info != nil && info.data != nil {
		attrs, err := parseInfo(info.name, info.data)
		if err != nil {
			return err
		}
		if err := c.imageInfo(f, attrs); err != nil {
			return err
		}
	}
	banks := c.banks()
	for _, k := range c.kernels {
		if info := ks.info[k.Name]; info != nil && info.data != nil {
			attrs, err := parseInfo(info.name, info.data)
			if err != nil {
				return err
			}
			if err := c.kernelInfo(f, k, attrs); err != nil {
				return err
			}
		}
		if err := k.checkParams(); err != nil {
			return err
		}
		k.Banks = banks.of(k.Name)
	}
	return nil
}

// bankSet is the constant banks other than 0 the image holds: its own
// (.nv.constantN), the first section of each number, and each kernel's
// (.nv.constantN.<kernel>), which take the place of the image's of the
// same number, the last section of each number.
type bankSet struct {
	image  []Bank            // by number
	shared []Bank            // image, for the kernels without banks of their own
	own    map[string][]Bank // by kernel, in section order
}

// banks sorts out the image's constant banks in one pass over its
// sections.
func (c *Cubin) banks() bankSet {
	var image [32]Bank
	set := bankSet{own: map[string][]Bank{}}
	for _, s := range c.sections {
		bank, owner := bankOf(s.Name)
		if bank <= 0 || !s.Laid {
			continue
		}
		b := Bank{Index: bank, Offset: s.Offset, Size: uint32(min(s.Size, 1<<32-1))}
		switch {
		case owner != "":
			set.own[owner] = append(set.own[owner], b)
		case image[bank].Index == 0:
			image[bank] = b
		}
	}
	for _, b := range image {
		if b.Index != 0 {
			set.image = append(set.image, b)
		}
	}
	set.shared = slices.Clip(set.image)
	return set
}

// of is the constant banks other than 0 that kernel's launches bind, by
// number: the image's, and its own, which take their place. Kernels
// without banks of their own share one read-only slice.
func (set bankSet) of(kernel string) []Bank {
	own := set.own[kernel]
	if len(own) == 0 {
		return set.shared
	}
	var banks [32]Bank
	for _, b := range set.image {
		banks[b.Index] = b
	}
	for _, b := range own {
		banks[b.Index] = b
	}
	var out []Bank
	for _, b := range banks {
		if b.Index != 0 {
			out = append(out, b)
		}
	}
	return out
}

// SM is the architecture of the cubin's code, major*10 + minor.
func (c *Cubin) SM() int { return c.sm }

// Size is the bytes of memory the image takes where it is placed,
// PrefetchSlack included.
func (c *Cubin) Size() int { return int(c.size) }

// Align is the alignment the image's address needs: the largest of its
// sections', at least 256.
func (c *Cubin) Align() uint64 { return c.align }

// Sections lists the cubin's sections, in file order.
func (c *Cubin) Sections() []Section { return slices.Clone(c.sections) }

// Symbols lists the cubin's symbols, in file order.
func (c *Cubin) Symbols() []Symbol { return slices.Clone(c.symbols) }

// Kernels lists the cubin's kernels, in symbol order.
func (c *Cubin) Kernels() []*Kernel { return slices.Clone(c.kernels) }

// Kernel is the kernel of that name, or false.
func (c *Cubin) Kernel(name string) (*Kernel, bool) {
	k, ok := c.byName[name]
	return k, ok
}

// Undefined names, sorted, the symbols the cubin refers to and does not
// define; Parse refuses a cubin that has any.
func (c *Cubin) Undefined() []string {
	var s []string
	for n := range c.undefined {
		s = append(s, n)
	}
	slices.Sort(s)
	return s
}

func (c *Cubin) checkDefined() error {
	if len(c.undefined) == 0 {
		return nil
	}
	return &UndefinedError{Symbols: c.Undefined()}
}
