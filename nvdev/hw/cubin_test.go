package hw

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestKernelsAgreeWithListings checks, for every kernel of every test
// cubin, what the loader reads against what nvcc's cuobjdump listed.
func TestKernelsAgreeWithListings(t *testing.T) {
	for _, sm := range archs {
		t.Run(fmt.Sprintf("sm_%d", sm), func(t *testing.T) {
			l := readListing(t, sm)
			c, err := Inspect(readCubin(t, sm))
			if err != nil {
				t.Fatal(err)
			}
			if c.SM() != sm {
				t.Errorf("SM %d, want %d", c.SM(), sm)
			}
			var names, listed []string
			for _, k := range c.Kernels() {
				names = append(names, k.Name)
			}
			for n, f := range l.funcs {
				if f.bank0 != 0 {
					listed = append(listed, n)
				}
			}
			slices.Sort(names)
			slices.Sort(listed)
			if !slices.Equal(names, listed) {
				t.Fatalf("kernels %v, listed %v", names, listed)
			}
			for _, k := range c.Kernels() {
				checkKernel(t, c, l, k)
			}
		})
	}
}

func checkKernel(t *testing.T, c *Cubin, l *listing, k *Kernel) {
	t.Helper()
	f := l.funcs[k.Name]
	errorf := func(format string, args ...any) {
		t.Helper()
		t.Errorf("sm_%d %s: "+format, append([]any{l.sm, k.Name}, args...)...)
	}
	if k.Registers != f.reg || k.Registers != f.regcount {
		errorf("registers %d, listed REG:%d and EIATTR_REGCOUNT %d", k.Registers, f.reg, f.regcount)
	}
	if k.Stack() != f.stack || k.MinStack != f.minStack || k.FrameSize != f.frame {
		errorf("stack %d (min %d, frame %d), listed STACK:%d (min %d, frame %d)",
			k.Stack(), k.MinStack, k.FrameSize, f.stack, f.minStack, f.frame)
	}
	if k.Shared != f.shared {
		errorf("shared %d, listed SHARED:%d", k.Shared, f.shared)
	}
	if s := l.sections[".nv.shared."+k.Name]; s.size != k.Shared {
		errorf("shared %d, listed section of %d", k.Shared, s.size)
	}
	if k.Bank0Bytes != f.bank0 {
		errorf("constant bank 0 of %d bytes, listed CONSTANT[0]:%d", k.Bank0Bytes, f.bank0)
	}
	if f.hasParamCbank {
		if k.ParamOffset != f.paramOffset || k.ParamBytes != f.paramSize || k.ParamBytes != f.cbankParamSize {
			errorf("parameters %#x+%d, listed EIATTR_PARAM_CBANK %#x+%d, CBANK_PARAM_SIZE %d",
				k.ParamOffset, k.ParamBytes, f.paramOffset, f.paramSize, f.cbankParamSize)
		}
		if k.ParamOffset+k.ParamBytes != f.bank0 {
			errorf("parameters end at %#x, constant bank 0 at %#x", k.ParamOffset+k.ParamBytes, f.bank0)
		}
	} else if k.ParamBytes != 0 || k.ParamOffset != f.bank0 {
		errorf("parameters %#x+%d for a kernel of none, bank 0 of %d", k.ParamOffset, k.ParamBytes, f.bank0)
	}
	if !slices.Equal(k.Params, f.params) {
		errorf("parameters %v, listed %v", k.Params, f.params)
	}
	if k.Barriers != f.barriers {
		errorf("barriers %d, listed EIATTR_NUM_BARRIERS %d", k.Barriers, f.barriers)
	}
	if !slices.Equal(k.Externs, f.externs) {
		errorf("externs %v, listed %v", k.Externs, f.externs)
	}
	text := l.sections[".text."+k.Name]
	if int(k.CodeBytes) != text.size {
		errorf("code of %d bytes, listed section of %d", k.CodeBytes, text.size)
	}
	for _, s := range c.Sections() {
		if s.Name == ".text."+k.Name && (!s.Laid || s.Offset != k.Code) {
			errorf("code at %#x, its section laid %v at %#x", k.Code, s.Laid, s.Offset)
		}
	}
	if len(k.Banks) != 2 || k.Banks[0].Index != 3 || k.Banks[1].Index != 4 ||
		int(k.Banks[0].Size) != l.sections[".nv.constant3"].size || int(k.Banks[1].Size) != l.sections[".nv.constant4"].size {
		errorf("banks %v, listed .nv.constant3 of %d and .nv.constant4 of %d",
			k.Banks, l.sections[".nv.constant3"].size, l.sections[".nv.constant4"].size)
	}
}

// TestParamsOffset pins the constant bank 0 layouts nvcc chose: the
// parameters at 0x210 on sm_90 (cuobjdump -res-usage: CONSTANT[0] is
// 0x210 plus the parameters), at 0x160 on sm_8x, except params32000's,
// whose 32,008 bytes start at 0x1a80 on sm_8x.
func TestParamsOffset(t *testing.T) {
	for _, sm := range archs {
		c, err := Inspect(readCubin(t, sm))
		if err != nil {
			t.Fatal(err)
		}
		g, _ := ForSM(sm)
		for _, k := range c.Kernels() {
			want := g.ParamsOffset
			if k.Name == "params32000" && sm < 90 {
				want = 0x1a80
			}
			if k.ParamOffset != want {
				t.Errorf("sm_%d %s: parameters at %#x, want %#x", sm, k.Name, k.ParamOffset, want)
			}
		}
		twice, _ := c.Kernel("twice")
		if twice.ParamBytes != 8 || twice.Bank0Bytes != g.ParamsOffset+8 {
			t.Errorf("sm_%d twice: %d parameter bytes, bank 0 of %d", sm, twice.ParamBytes, twice.Bank0Bytes)
		}
	}
}

// TestRelocationsAgreeWithListings checks the relocations the image's
// laying applies against cuobjdump's: those of the sections the image
// holds (.nv.constant4), and none of the debugging information's.
func TestRelocationsAgreeWithListings(t *testing.T) {
	for _, sm := range archs {
		l := readListing(t, sm)
		c, err := Inspect(readCubin(t, sm))
		if err != nil {
			t.Fatal(err)
		}
		offsets := map[string]uint64{}
		for _, s := range c.Sections() {
			offsets[s.Name] = s.Offset
		}
		var got, want []string
		for _, r := range c.Relocations() {
			got = append(got, fmt.Sprintf("%s+%#x %s %s %d", r.Section, r.Offset-offsets[r.Section], r.Symbol, RelocationName(r.Type), r.Addend))
		}
		for _, r := range l.relocs {
			if strings.HasPrefix(r.section, ".debug") {
				continue
			}
			want = append(want, fmt.Sprintf("%s+%#x %s %s %d", r.section, r.offset, r.symbol, r.typ, r.addend))
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) || len(got) != 7 {
			t.Errorf("sm_%d: relocations\n%s\nlisted\n%s", sm, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestDriverFunctionsRefused: an image that refers to vprintf or
// __assertfail is refused, naming them, even where the kernel to launch
// calls neither.
func TestDriverFunctionsRefused(t *testing.T) {
	cases := []struct {
		name    string
		edit    func(*cubinEdit) *cubinEdit
		refused []string
	}{
		{"as nvcc wrote it", func(e *cubinEdit) *cubinEdit { return e }, []string{"__assertfail", "vprintf"}},
		{"uses_printf's vprintf", func(e *cubinEdit) *cubinEdit { return e.define("__assertfail", ".nv.global.init") }, []string{"vprintf"}},
		{"uses_assert's __assertfail", func(e *cubinEdit) *cubinEdit { return e.define("vprintf", ".nv.global.init") }, []string{"__assertfail"}},
	}
	for _, sm := range archs {
		for _, tc := range cases {
			b := tc.edit(editCubin(t, sm)).bytes()
			_, err := Parse(b)
			var u *UndefinedError
			if !errors.As(err, &u) || !slices.Equal(u.Symbols, tc.refused) {
				t.Errorf("sm_%d %s: Parse: %v, want a refusal of %v", sm, tc.name, err, tc.refused)
				continue
			}
			for _, s := range tc.refused {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("sm_%d %s: %q does not name %s", sm, tc.name, err, s)
				}
			}
			c, err := Inspect(b)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Lay(1 << 32); !errors.As(err, &u) {
				t.Errorf("sm_%d %s: Lay of an inspected image: %v", sm, tc.name, err)
			}
			p, _ := c.Kernel("uses_printf")
			a, _ := c.Kernel("uses_assert")
			if !slices.Equal(p.Externs, []string{"vprintf"}) || !slices.Equal(a.Externs, []string{"__assertfail"}) {
				t.Errorf("sm_%d: externs of uses_printf %v, of uses_assert %v", sm, p.Externs, a.Externs)
			}
		}
		if _, err := Parse(editCubin(t, sm).defineDriverFunctions().bytes()); err != nil {
			t.Errorf("sm_%d: an image that defines both: %v", sm, err)
		}
	}
}

func TestUnsupportedRelocationRefusedByName(t *testing.T) {
	for _, sm := range archs {
		b := editCubin(t, sm).defineDriverFunctions().retype(relocSection(sm), "counter", 0x3a).bytes()
		_, err := Parse(b)
		var r *RelocationError
		if !errors.As(err, &r) || !strings.Contains(err.Error(), "R_CUDA_ABS47_34") || !strings.Contains(err.Error(), "counter") {
			t.Errorf("sm_%d: %v, want a refusal of R_CUDA_ABS47_34 of counter", sm, err)
		}
	}
	if RelocationName(0x200) == "" || RelocationName(RCuda64) != "R_CUDA_64" || RelocationName(0x73) != "R_CUDA_CONST_FIELD22_37" {
		t.Error("RelocationName")
	}
}

func TestRefusals(t *testing.T) {
	b := readCubin(t, 90)
	cases := map[string]func([]byte) []byte{
		"empty":       func([]byte) []byte { return nil },
		"not ELF":     func(b []byte) []byte { b[0] = 0; return b },
		"32-bit":      func(b []byte) []byte { b[4] = 1; return b },
		"x86-64":      func(b []byte) []byte { b[18] = 62; return b },
		"relocatable": func(b []byte) []byte { b[16] = 1; return b },
		"sm_75":       func(b []byte) []byte { b[49] = 75; return b },
		"sm_100":      func(b []byte) []byte { b[49] = 100; return b },
		"truncated":   func(b []byte) []byte { return b[:len(b)/2] },
		"headers past the end": func(b []byte) []byte {
			le.PutUint64(b[40:], uint64(len(b)))
			return b
		},
	}
	for name, edit := range cases {
		c, err := Parse(edit(append([]byte(nil), b...)))
		if err == nil || c != nil {
			t.Errorf("%s: accepted", name)
		}
		if name == "sm_75" || name == "sm_100" {
			if !errors.Is(err, ErrArch) {
				t.Errorf("%s: %v, want ErrArch", name, err)
			}
		} else if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
}

func TestBankOf(t *testing.T) {
	for name, want := range map[string][2]any{
		".nv.constant0.twice": {0, "twice"}, ".nv.constant4": {4, ""}, ".nv.constant17": {17, ""},
		".nv.constant": {-1, ""}, ".nv.constantx": {-1, ""}, ".nv.constant03": {-1, ""}, ".text.twice": {-1, ""},
	} {
		bank, k := bankOf(name)
		if bank != want[0] || k != want[1] {
			t.Errorf("bankOf(%q) = %d, %q", name, bank, k)
		}
	}
}

// TestRefusalsWrapMalformed: the parser's refusals of a relocation it
// cannot apply to a section of the image wrap ErrMalformed.
func TestRefusalsWrapMalformed(t *testing.T) {
	index := func(e *cubinEdit, match func(string) bool) int {
		for i, s := range e.f.Sections {
			if match(s.Name) {
				return i
			}
		}
		e.t.Fatal("no such section")
		return 0
	}
	for _, sm := range archs {
		for _, tc := range []struct {
			want string
			edit func(e *cubinEdit) *cubinEdit
		}{
			{"lies in a section the image does not hold", func(e *cubinEdit) *cubinEdit {
				return e.define("counter", ".nv.info")
			}},
			{"relocates constant bank 0", func(e *cubinEdit) *cubinEdit {
				bank0 := index(e, func(n string) bool { return strings.HasPrefix(n, ".nv.constant0.") })
				rel := index(e, func(n string) bool { return n == relocSection(sm) })
				le.PutUint32(e.b[le.Uint64(e.b[40:])+uint64(rel)*shdrSize+44:], uint32(bank0))
				return e
			}},
		} {
			_, err := Parse(tc.edit(editCubin(t, sm).defineDriverFunctions()).bytes())
			if !errors.Is(err, ErrMalformed) || !strings.Contains(fmt.Sprint(err), tc.want) {
				t.Errorf("sm_%d: %v, want ErrMalformed: %s", sm, err, tc.want)
			}
		}
	}
}
