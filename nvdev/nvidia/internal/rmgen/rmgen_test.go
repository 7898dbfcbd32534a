package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A header in the RM's style: macros, comments, an extern "C" block whose
// closing brace sits in a conditional, forced alignments, arrays sized by
// macro expressions, an enum, a struct used through a typedef alias, and
// declarations the parser skips.
const testHeader = `
#ifndef TEST_H
#define TEST_H
#ifdef __cplusplus
extern "C" {
#endif
#define COUNT        (2U * 3U)   /* six */
#define NESTED       (COUNT + 1) // seven
#define SHIFTED      (1 << 4)
#define FUNC(x)      ((x) + 1)
typedef enum { A_ZERO, A_ONE } TEST_ENUM;
typedef struct TEST_INNER {
    NvU32 flags;
    NV_DECLARE_ALIGNED(NvU64 route, 8);
} TEST_INNER;
typedef TEST_INNER TEST_INNER_ALIAS;
/* a struct with a union is not for the table */
typedef struct { union { NvU32 a; NvU64 b; } u; } TEST_UNION;
typedef struct
{
    NvHandle  hClient;                 // [IN] a comment with "quotes"
    NvBool    bEnable;
    NvU8      bytes[COUNT];
    NvU64     offset NV_ALIGN_BYTES(8);
    TEST_INNER_ALIAS inner;
    TEST_ENUM kind;
    NvU32     list[NESTED], tail;
    char      name[SHIFTED];
    NvP64     pData NV_ALIGN_BYTES(8);
    NvU16     gpuId;
} TEST_PARAMS;
static inline int helper(void) { return 0; }
#ifdef __cplusplus
}
#endif
#endif
`

func testGen(t *testing.T, specs []*structSpec, consts []constSpec) *gen {
	t.Helper()
	g := &gen{decls: newDecls(), structs: specs, consts: consts, layouts: map[string]*layout{}, byC: map[string]*structSpec{}}
	for _, s := range specs {
		g.byC[s.C] = s
	}
	if err := g.decls.parseHeader("inc/test.h", testHeader); err != nil {
		t.Fatal(err)
	}
	return g
}

func TestLayout(t *testing.T) {
	inner := &structSpec{Go: "testInner", C: "TEST_INNER_ALIAS", Header: "test.h", Size: 16}
	params := &structSpec{Go: "testParams", C: "TEST_PARAMS", Header: "test.h", Size: 112,
		Fields: []fieldSpec{ft("hClient", "Client", "", "the client"), ft("name", "", "byte", "")}}
	g := testGen(t, []*structSpec{inner, params}, []constSpec{{Go: "count", Macro: "COUNT"}})
	l, err := g.layoutOf(params)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name, typ string
		offset    int
	}{
		{"Client", "Handle", 0},
		{"Enable", "uint8", 4},
		{"Bytes", "[count]uint8", 5},
		{"Offset", "uint64", 16},
		{"Inner", "testInner", 24},
		{"Kind", "uint32", 40},
		{"List", "[7]uint32", 44},
		{"Tail", "uint32", 72},
		{"Name", "[16]byte", 76},
		{"Data", "uint64", 96},
		{"GPUID", "uint16", 104},
	}
	if len(l.members) != len(want) {
		t.Fatalf("%d members, want %d", len(l.members), len(want))
	}
	for i, w := range want {
		m := l.members[i]
		if m.goName != w.name || m.goType != w.typ || m.offset != w.offset {
			t.Errorf("member %d: %s %s at %d, want %s %s at %d", i, m.goName, m.goType, m.offset, w.name, w.typ, w.offset)
		}
	}
	if l.members[0].doc != "the client" {
		t.Errorf("doc %q", l.members[0].doc)
	}
	if l.size != 112 || l.align != 8 {
		t.Errorf("size %d align %d, want 112 and 8", l.size, l.align)
	}
}

func TestLayoutErrors(t *testing.T) {
	for _, c := range []struct {
		spec *structSpec
		want string
	}{
		{&structSpec{Go: "x", C: "TEST_PARAMS", Header: "other.h"}, "the table says other.h"},
		{&structSpec{Go: "x", C: "NO_SUCH", Header: "test.h"}, "the table says test.h"},
		{&structSpec{Go: "x", C: "TEST_UNION", Header: "test.h"}, "does not take it"},
		{&structSpec{Go: "x", C: "TEST_PARAMS", Header: "test.h"}, "struct TEST_INNER is not in the table"},
		{&structSpec{Go: "x", C: "TEST_INNER", Header: "test.h", Size: 12}, "16 bytes, the table says 12"},
		{&structSpec{Go: "x", C: "TEST_INNER", Header: "test.h", Fields: []fieldSpec{f("nope", "Nope")}}, "has no member nope"},
		{&structSpec{Go: "x", C: "TEST_INNER", Header: "test.h", Fields: []fieldSpec{f("route", "Flags")}}, "two fields named Flags"},
	} {
		g := testGen(t, []*structSpec{c.spec}, nil)
		_, err := g.layoutOf(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.spec.C, err, c.want)
		}
	}
}

func TestEval(t *testing.T) {
	d := newDecls()
	for _, m := range []string{
		"define A 4", "define B (A * 2U)", "define C ((NvU32)0x10UL | B)", "define SELF (SELF + 1)",
		"define BIG (BIG1 + BIG1)", "define BIG1 (BIG2 + BIG2)", "define BIG2 (BIG3 + BIG3)",
		"define BIG3 (BIG4 + BIG4)", "define BIG4 (BIG5 + BIG5)", "define BIG5 (BIG6 + BIG6)",
		"define BIG6 (BIG7 + BIG7)", "define BIG7 (BIG8 + BIG8)", "define BIG8 (BIG9 + BIG9)",
		"define BIG9 (BIG10 + BIG10)", "define BIG10 (BIG11 + BIG11)", "define BIG11 (BIG12 + BIG12)",
		"define BIG12 (BIG13 + BIG13)", "define BIG13 (BIG14 + BIG14)", "define BIG14 (BIG15 + BIG15)",
		"define BIG15 (BIG16 + BIG16)", "define BIG16 1",
		"define FN(x) x", "undef A",
		"define BIT(b) (1U<<(b))", "define TWO(a, b) a", "define FIELD 24:23", "define ONEBIT (7:7)",
		"define MAGIC 'F'",
	} {
		d.directive(m)
	}
	if err := d.parseHeader("e.h", "typedef enum { E0, E1, E5 = BIT(2) + 1, E6 } ENUM_T;"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		expr string
		want int64
		err  string
	}{
		{"A", 4, ""},
		{"B", 8, ""},
		{"C", 0x18, ""},
		{"1 << 4 >> 2", 4, ""},
		{"-3 + ~0", -4, ""},
		{"7 / 2 % 3", 0, ""},
		{"(1 + 2) * 3 - 1 & 6", 0, ""},
		{"BIT(3) | BIT(A)", 0x18, ""},
		{"FN(B + 1)", 9, ""},
		{"1 << lo(FIELD)", 1 << 23, ""},
		{"lo(ONEBIT)", 7, ""},
		{"MAGIC", 'F', ""},
		{"E0 + E1 * 10 + E5 * 100 + E6 * 1000", 6510, ""},
		{"lo(A)", 0, "not a bit field"},
		{"lo(FIELD, A)", 0, "lo takes one macro"},
		{"TWO(1, 2)", 0, "unknown function-like macro TWO"},
		{"BIT(1", 0, "missing )"},
		{"SELF", 0, "too deep"},
		{"BIG", 0, "too large"},
		{"FN", 0, "unknown name FN"},
		{"A B", 0, "trailing"},
		{"1 / 0", 0, "division by zero"},
		{"1 << 64", 0, "shift by 64"},
		{"(1", 0, "missing )"},
		{"", 0, "unexpected end"},
		{"0xZZ", 0, "invalid syntax"},
	} {
		v, err := d.eval(c.expr)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %d, %v; want an error with %q", c.expr, v, err, c.err)
			}
			continue
		}
		if err != nil || v != c.want {
			t.Errorf("%q = %d, %v; want %d", c.expr, v, err, c.want)
		}
	}
}

func TestGoName(t *testing.T) {
	for _, c := range []struct {
		f    cField
		want string
	}{
		{cField{Type: "NvHandle", Name: "hObjectParent"}, "ObjectParent"},
		{cField{Type: "NvU32", Name: "hwwGlobalEsr"}, "HwwGlobalEsr"},
		{cField{Type: "NvBool", Name: "bAllowMmap"}, "AllowMmap"},
		{cField{Type: "NvU8", Name: "bAllowMmap"}, "BAllowMmap"},
		{cField{Type: "NvP64", Name: "pMemory"}, "Memory"},
		{cField{Type: "NvU32", Name: "gpu_id"}, "GPUID"},
		{cField{Type: "NvU64", Name: "vaSpaceSize"}, "VASpaceSize"},
		{cField{Type: "int", Name: "fd"}, "FD"},
		{cField{Type: "NvU32", Name: "rmCtrlFd"}, "RMCtrlFD"},
		{cField{Type: "NvU32", Name: "ProcessID"}, "ProcessID"},
	} {
		if got := goName(c.f); got != c.want {
			t.Errorf("%s %s: %s, want %s", c.f.Type, c.f.Name, got, c.want)
		}
	}
}

func TestParseStatus(t *testing.T) {
	codes, err := parseStatus(`// NV_STATUS_CODE(NV_ERR_COMMENTED, 0x00000099, "x")
NV_STATUS_CODE(NV_OK,                0x00000000, "Success")
NV_STATUS_CODE(NV_ERR_GENERIC,       0x0000FFFF, "a sentence, with a comma")
  NV_STATUS_CODE(NV_WARN_NOTHING_TO_DO, 0x00010006, "x")
`)
	if err != nil {
		t.Fatal(err)
	}
	want := []statusCode{{"NV_OK", 0}, {"NV_ERR_GENERIC", 0xffff}, {"NV_WARN_NOTHING_TO_DO", 0x10006}}
	if len(codes) != len(want) {
		t.Fatalf("%v, want %v", codes, want)
	}
	for i := range want {
		if codes[i] != want[i] {
			t.Errorf("%v, want %v", codes[i], want[i])
		}
	}
	for text, msg := range map[string]string{
		"": "no NV_STATUS_CODE lines",
		"NV_STATUS_CODE(NV_A, 0x1, \"\")\nNV_STATUS_CODE(NV_A, 0x2, \"\")": "NV_A twice",
		"NV_STATUS_CODE(NV_A, 0x1, \"\")\nNV_STATUS_CODE(NV_B, 0x1, \"\")": "NV_A and NV_B are both 0x1",
	} {
		if _, err := parseStatus(text); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: %v, want an error with %q", text, err, msg)
		}
	}
}

// The generated files of a small table: the structs with explicit padding,
// the constants, the layout test and the status table, each naming its
// source and no text of the header.
func TestFiles(t *testing.T) {
	inner := &structSpec{Go: "testInner", C: "TEST_INNER", Header: "test.h", Doc: "It is ours."}
	params := &structSpec{Go: "testParams", C: "TEST_PARAMS", Header: "test.h"}
	g := testGen(t, []*structSpec{inner, params}, []constSpec{{Go: "count", Macro: "COUNT", Header: "test.h", Want: 6}})
	g.release = "580.1"
	g.status = []statusSpec{{"statusGeneric", "NV_ERR_GENERIC"}}
	g.checks = []checkSpec{{"count", "COUNT"}, {"shifted", "SHIFTED"}}
	g.sources = map[string]string{"src/common/sdk/nvidia/inc/nvstatuscodes.h": "NV_STATUS_CODE(NV_ERR_GENERIC, 0x0000FFFF, \"Failure: Generic Error\")\n"}
	files, err := g.files()
	if err != nil {
		t.Fatal(err)
	}
	rm := string(files["zz_rm_generated.go"])
	for _, want := range []string{
		"// Code generated by rmgen from open-gpu-kernel-modules 580.1. DO NOT EDIT.\n",
		"// count is COUNT (test.h).\nconst count = 6\n",
		"// testInner mirrors TEST_INNER (test.h), 16 bytes on x86-64 and arm64. It\n// is ours.\ntype testInner struct {",
		"\tFlags uint32\n\t_     [4]byte\n\tRoute uint64\n}",
		"\tBytes  [count]uint8\n\t_      [5]byte\n\tOffset uint64\n",
		"\tGPUID  uint16\n\t_      [6]byte\n}",
	} {
		if !strings.Contains(rm, want) {
			t.Errorf("zz_rm_generated.go lacks %q:\n%s", want, rm)
		}
	}
	if strings.Contains(rm, "quotes") || strings.Contains(rm, "[IN]") {
		t.Error("a header's comment reached the output")
	}
	if test := string(files["zz_rm_generated_test.go"]); !strings.Contains(test, `{reflect.TypeFor[testInner](), 16, []generatedField{{"Flags", 0}, {"Route", 8}}},`) {
		t.Errorf("zz_rm_generated_test.go:\n%s", test)
	}
	if test := string(files["zz_rm_generated_test.go"]); !strings.Contains(test, `{"count", count, 0x6, "COUNT"},`) ||
		!strings.Contains(test, `{"shifted", shifted, 0x10, "SHIFTED"},`) {
		t.Errorf("zz_rm_generated_test.go lacks the constants' checks:\n%s", test)
	}
	st := string(files["zz_status_generated.go"])
	if !strings.Contains(st, "statusGeneric = 0x0000ffff // NV_ERR_GENERIC") || !strings.Contains(st, `0x0000FFFF: "NV_ERR_GENERIC",`) {
		t.Errorf("zz_status_generated.go:\n%s", st)
	}
	if strings.Contains(st, "Failure") {
		t.Error("a status text reached the output")
	}
	g.consts[0].Want = 7
	if _, err := g.files(); err == nil || !strings.Contains(err.Error(), "COUNT is 6, the table says 7") {
		t.Errorf("a constant off the table's value: %v", err)
	}
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	if err := run("", dir); err == nil || !strings.Contains(err.Error(), "OPEN_GPU_KERNEL_MODULES") {
		t.Errorf("no source: %v", err)
	}
	if err := run(dir, dir); err == nil || !strings.Contains(err.Error(), "not a checkout") {
		t.Errorf("no version.mk: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "version.mk"), []byte("NVIDIA_VERSION = 590.44.01\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(dir, dir); err == nil || !strings.Contains(err.Error(), "release 590.44.01; the package supports 580") {
		t.Errorf("another release: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "version.mk"), []byte("NVIDIA_VERSION = 580.142\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(dir, dir); err == nil || !strings.Contains(err.Error(), "nvlimits.h: not in") {
		t.Errorf("no headers: %v", err)
	}
}

// FuzzParseHeader: parseHeader never panics and reads a header the same
// each time. Each field of a struct it reads has a type, an identifier for
// its name and no negative alignment. A macro named by an identifier that
// evaluates evaluates as its text in parentheses does, and negated,
// complemented or with 1 added to the value it has.
func FuzzParseHeader(f *testing.F) {
	f.Add(testHeader)
	f.Add("typedef struct {")
	f.Add("struct a { NV_DECLARE_ALIGNED(, 8); };")
	f.Add("#define A (A\ntypedef struct { NvU32 x[A]; } T;")
	f.Add("#define A (1 << 3) | 2\n#define B A * -A\ntypedef enum { X = B, Y } E;")
	f.Fuzz(func(t *testing.T, src string) {
		d := newDecls()
		err := d.parseHeader("fuzz.h", src)
		again := newDecls()
		if err2 := again.parseHeader("fuzz.h", src); fmt.Sprint(err) != fmt.Sprint(err2) || err == nil && !reflect.DeepEqual(d, again) {
			t.Fatalf("parsed twice: %v, then %v", err, err2)
		}
		if err != nil {
			return
		}
		for name, text := range d.macros {
			v, err := d.eval(name)
			if err != nil || !isIdent(name) { // "#define 0" names a number
				continue
			}
			for _, c := range []struct {
				expr string
				want int64
			}{{"(" + text + ")", v}, {"-" + name, -v}, {"~" + name, ^v}, {name + " + 1", v + 1}} {
				if got, err := d.eval(c.expr); err != nil || got != c.want {
					t.Fatalf("%s (%q) is %d; %q evaluates to %d (%v), want %d", name, text, v, c.expr, got, err, c.want)
				}
			}
		}
		for key, s := range d.structs {
			for _, fl := range s.Fields {
				if fl.Type == "" || !isIdent(fl.Name) || fl.Align < 0 {
					t.Fatalf("%s: field %+v", key, fl)
				}
				for _, dim := range fl.Dims {
					d.eval(dim)
				}
			}
		}
	})
}
