package hw

import (
	"bufio"
	"debug/elf"
	"fmt"
	"github.com/rig-go/rig/internal/testkernels"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The listings nvcc's cuobjdump wrote for the test cubins
// of internal/testkernels (testdata/kernels.sm_XX.elf.txt from cuobjdump -elf and
// .res-usage.txt from cuobjdump -res-usage, which its build.sh writes here),
// read back independently of
// the loader, so that the loader's returns are checked against NVIDIA's
// own tools.

var archs = []int{80, 86, 89, 90}

type listedFunc struct {
	// cuobjdump -res-usage
	reg, stack, shared, local, bank0 int
	// .nv.info
	regcount, frame, minStack        int
	hasParamCbank                    bool
	paramSym, paramOffset, paramSize int
	cbankParamSize                   int
	params                           []Param
	barriers                         int
	externs                          []string
}

type listedSection struct {
	index, size int
	typ         string
	flags       uint64
}

type listedReloc struct {
	section string
	offset  uint64
	symbol  string
	typ     string
	addend  int64
}

type listing struct {
	sm       int
	funcs    map[string]*listedFunc
	sections map[string]listedSection
	relocs   []listedReloc
}

func hexOrDec(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.ParseInt(strings.TrimSpace(s), 0, 64)
	if err != nil {
		t.Fatalf("listing: number %q: %v", s, err)
	}
	return int(n)
}

var (
	resFunc   = regexp.MustCompile(`^ Function (\S+):$`)
	resUsage  = regexp.MustCompile(`REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+) CONSTANT\[0\]:(\d+)`)
	secLine   = regexp.MustCompile(`^\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+(\S+)$`)
	infoFunc  = regexp.MustCompile(`function: (\S+)\(0x[0-9a-f]+\)\s+(register count|frame size|min stack size|max stack size): (\S+)`)
	kparam    = regexp.MustCompile(`Ordinal : (0x[0-9a-f]+)\s+Offset\s+: (0x[0-9a-f]+)\s+Size\s+: (0x[0-9a-f]+)`)
	externRe  = regexp.MustCompile(`(\S+)\(0x[0-9a-f]+\)`)
	relocLine = regexp.MustCompile(`^(0x[0-9a-f]+)\s+(\S+)\s+(R_CUDA_\S+)(?:\s+(\S+))?`)
)

func readListing(t *testing.T, sm int) *listing {
	t.Helper()
	l := &listing{sm: sm, funcs: map[string]*listedFunc{}, sections: map[string]listedSection{}}
	fn := func(name string) *listedFunc {
		if l.funcs[name] == nil {
			l.funcs[name] = &listedFunc{}
		}
		return l.funcs[name]
	}

	res, err := os.ReadFile(fmt.Sprintf("testdata/kernels.sm_%d.res-usage.txt", sm))
	if err != nil {
		t.Fatal(err)
	}
	var cur string
	for _, line := range strings.Split(string(res), "\n") {
		if m := resFunc.FindStringSubmatch(line); m != nil {
			cur = m[1]
			continue
		}
		if m := resUsage.FindStringSubmatch(line); m != nil && cur != "" {
			f := fn(cur)
			f.reg, f.stack, f.shared = hexOrDec(t, m[1]), hexOrDec(t, m[2]), hexOrDec(t, m[3])
			f.local, f.bank0 = hexOrDec(t, m[4]), hexOrDec(t, m[5])
			cur = ""
		}
	}

	file, err := os.Open(fmt.Sprintf("testdata/kernels.sm_%d.elf.txt", sm))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var (
		block    string // the listed section being read
		attr     string
		relocSec string
	)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, ".section "):
			block, relocSec = "", ""
			f := strings.Fields(strings.TrimPrefix(line, ".section "))
			if len(f) == 2 && (f[1] == "REL" || f[1] == "RELA") {
				relocSec = strings.TrimPrefix(strings.TrimPrefix(f[0], ".rela"), ".rel")
			}
			continue
		case strings.HasPrefix(line, "."):
			block, relocSec = line, ""
			continue
		}
		if m := secLine.FindStringSubmatch(line); m != nil && block == "" && relocSec == "" {
			idx, _ := strconv.ParseInt(m[1], 16, 64)
			size, _ := strconv.ParseInt(m[3], 16, 64)
			flags, _ := strconv.ParseUint(m[7], 16, 64)
			l.sections[m[10]] = listedSection{index: int(idx), size: int(size), typ: m[6], flags: flags}
			continue
		}
		if relocSec != "" {
			if m := relocLine.FindStringSubmatch(line); m != nil {
				off, _ := strconv.ParseUint(m[1], 0, 64)
				r := listedReloc{section: relocSec, offset: off, symbol: m[2], typ: m[3]}
				if m[4] != "" {
					r.addend = int64(hexOrDec(t, m[4]))
				}
				l.relocs = append(l.relocs, r)
			}
			continue
		}
		if !strings.HasPrefix(block, ".nv.info") {
			continue
		}
		line = strings.TrimSpace(line)
		if a, ok := strings.CutPrefix(line, "Attribute:"); ok {
			attr = strings.TrimSpace(a)
			continue
		}
		v, ok := strings.CutPrefix(line, "Value:")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if block == ".nv.info" {
			if m := infoFunc.FindStringSubmatch(v); m != nil {
				f := fn(m[1])
				n := hexOrDec(t, m[3])
				switch m[2] {
				case "register count":
					f.regcount = n
				case "frame size":
					f.frame = n
				case "min stack size":
					f.minStack = n
				}
			}
			continue
		}
		f := fn(strings.TrimPrefix(block, ".nv.info."))
		switch attr {
		case "EIATTR_PARAM_CBANK":
			w := strings.Fields(v)
			f.hasParamCbank = true
			f.paramSym = hexOrDec(t, w[0])
			packed := hexOrDec(t, w[1])
			f.paramOffset, f.paramSize = packed&0xffff, packed>>16
		case "EIATTR_CBANK_PARAM_SIZE":
			f.cbankParamSize = hexOrDec(t, v)
		case "EIATTR_KPARAM_INFO", "EIATTR_KPARAM_INFO_V2":
			m := kparam.FindStringSubmatch(v)
			if m == nil {
				t.Fatalf("listing: parameter %q", v)
			}
			f.params = append(f.params, Param{Ordinal: hexOrDec(t, m[1]), Offset: hexOrDec(t, m[2]), Size: hexOrDec(t, m[3])})
		case "EIATTR_NUM_BARRIERS":
			f.barriers = hexOrDec(t, v)
		case "EIATTR_EXTERNS":
			for _, m := range externRe.FindAllStringSubmatch(strings.TrimPrefix(v, "externs:"), -1) {
				f.externs = append(f.externs, m[1])
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(l.funcs) == 0 || len(l.sections) == 0 || len(l.relocs) == 0 {
		t.Fatalf("listing of sm_%d: %d functions, %d sections, %d relocations", sm, len(l.funcs), len(l.sections), len(l.relocs))
	}
	return l
}

func readCubin(t testing.TB, sm int) []byte {
	t.Helper()
	b, ok := testkernels.Cubin(fmt.Sprintf("sm_%d", sm))
	if !ok {
		t.Fatalf("no test cubin for sm_%d", sm)
	}
	return b
}

// The test cubins come from one source file, whose uses_printf and
// uses_assert refer to vprintf and __assertfail. The helpers below edit a
// copy of a cubin, as a linker would, to make images without those
// references or with other relocations: they read it with debug/elf,
// which serves for trusted input.

type cubinEdit struct {
	t *testing.T
	b []byte
	f *elf.File
}

func editCubin(t *testing.T, sm int) *cubinEdit {
	t.Helper()
	b := readCubin(t, sm)
	f, err := elf.NewFile(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return &cubinEdit{t: t, b: b, f: f}
}

func (e *cubinEdit) section(name string) *elf.Section {
	s := e.f.Section(name)
	if s == nil {
		e.t.Fatalf("no section %s", name)
	}
	return s
}

// symbolIndex is the index of a symbol in .symtab.
func (e *cubinEdit) symbolIndex(name string) int {
	syms, err := e.f.Symbols() // without the null symbol
	if err != nil {
		e.t.Fatal(err)
	}
	for i, s := range syms {
		if s.Name == name {
			return i + 1
		}
	}
	e.t.Fatalf("no symbol %s", name)
	return 0
}

// define makes an undefined symbol defined, at the start of section in.
func (e *cubinEdit) define(symbol, in string) *cubinEdit {
	sec := -1
	for i, s := range e.f.Sections {
		if s.Name == in {
			sec = i
		}
	}
	at := e.section(".symtab").Offset + uint64(e.symbolIndex(symbol))*24
	le.PutUint16(e.b[at+6:], uint16(sec))
	return e
}

// defineDriverFunctions defines vprintf and __assertfail in .nv.global.init,
// making an image Parse accepts.
func (e *cubinEdit) defineDriverFunctions() *cubinEdit {
	return e.define("vprintf", ".nv.global.init").define("__assertfail", ".nv.global.init")
}

// retype sets the type of the relocations of symbol in the relocation
// section rel.
func (e *cubinEdit) retype(rel, symbol string, typ uint32) *cubinEdit {
	s := e.section(rel)
	ent := uint64(16)
	if s.Type == elf.SHT_RELA {
		ent = 24
	}
	sym := uint64(e.symbolIndex(symbol))
	n := 0
	for off := s.Offset; off < s.Offset+s.Size; off += ent {
		if le.Uint64(e.b[off+8:])>>32 == sym {
			le.PutUint64(e.b[off+8:], sym<<32|uint64(typ))
			n++
		}
	}
	if n == 0 {
		e.t.Fatalf("no relocation of %s in %s", symbol, rel)
	}
	return e
}

func (e *cubinEdit) bytes() []byte { return e.b }

func relocSection(sm int) string {
	if sm == 90 {
		return ".rela.nv.constant4"
	}
	return ".rel.nv.constant4"
}

// TestListingsRead guards the comparisons against an empty reading of the
// listings.
func TestListingsRead(t *testing.T) {
	for _, sm := range archs {
		l := readListing(t, sm)
		twice, mixed := l.funcs["twice"], l.funcs["mixed"]
		g, _ := ForSM(sm)
		if twice.reg != 8 || twice.regcount != 8 || !twice.hasParamCbank || twice.paramOffset != g.ParamsOffset ||
			twice.paramSize != 8 || len(twice.params) != 1 || twice.bank0 != g.ParamsOffset+8 {
			t.Errorf("sm_%d twice: %+v", sm, *twice)
		}
		if len(mixed.params) != 5 || mixed.params[4] != (Param{Ordinal: 0, Offset: 0, Size: 1}) {
			t.Errorf("sm_%d mixed: %+v", sm, mixed.params)
		}
		if l.funcs["shared_static"].barriers != 1 || l.funcs["local_mem"].stack != 1024 ||
			l.funcs["local_mem"].minStack != 1024 || len(l.funcs["uses_printf"].externs) != 1 {
			t.Errorf("sm_%d: shared_static %+v, local_mem %+v, uses_printf %+v", sm,
				*l.funcs["shared_static"], *l.funcs["local_mem"], *l.funcs["uses_printf"])
		}
		if s := l.sections[".text.twice"]; s.size == 0 || s.typ != "PROGBITS" {
			t.Errorf("sm_%d .text.twice: %+v", sm, s)
		}
	}
}
