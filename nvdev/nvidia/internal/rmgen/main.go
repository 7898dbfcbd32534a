// Command rmgen writes the RM's parameter structs and status table of
// package nvidia from the C headers of NVIDIA's open-gpu-kernel-modules.
//
// It reads a checkout of that repository at the supported release, named
// by -src or the environment variable OPEN_GPU_KERNEL_MODULES, lays out
// each C struct its table names as gcc does on x86-64 and arm64, and
// writes, into the directory -o:
//
//   - zz_rm_generated.go: the Go structs, with explicit padding and
//     structs.HostLayout, and the array-length constants they use;
//   - zz_rm_generated_test.go: a test that checks by reflection that each
//     Go struct has the C struct's size and each field its offset, and one
//     that checks the package's hand-written constants (escapes, ioctls,
//     classes, controls, flags) against the values of their macros;
//   - zz_status_generated.go: the NV_STATUS names and the Status constants.
//
// The table (table.go) says which C struct becomes which Go type, under
// which Go field names and types, with the package's own doc text, and
// which hand-written constant stands for which C expression. Only
// names, types, sizes, offsets and values come from the headers; none of
// their comments or strings is copied.
//
// Package nvidia runs it through go generate; nothing else does, and the
// build and CI use the files it wrote.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// includeDirs are the checkout's include directories, searched in order.
var includeDirs = []string{
	"src/common/sdk/nvidia/inc",
	"kernel-open/common/inc",
	"kernel-open/nvidia-uvm",
	"src/nvidia/arch/nvalloc/unix/include",
}

// gen holds one run's headers and table.
type gen struct {
	decls   *cDecls
	structs []*structSpec
	byC     map[string]*structSpec
	consts  []constSpec
	status  []statusSpec
	checks  []checkSpec
	layouts map[string]*layout
	sources map[string]string // header path in the checkout to its text
	release string
}

func main() {
	src := flag.String("src", os.Getenv("OPEN_GPU_KERNEL_MODULES"), "a checkout of NVIDIA's open-gpu-kernel-modules at the supported release (default $OPEN_GPU_KERNEL_MODULES)")
	out := flag.String("o", ".", "the directory of package nvidia")
	flag.Parse()
	if err := run(*src, *out); err != nil {
		fmt.Fprintln(os.Stderr, "rmgen:", err)
		os.Exit(1)
	}
}

func run(src, out string) error {
	if src == "" {
		return fmt.Errorf("no headers: pass -src or set OPEN_GPU_KERNEL_MODULES to a checkout of github.com/NVIDIA/open-gpu-kernel-modules at release %s", supportedRelease)
	}
	g := &gen{decls: newDecls(), structs: structTable, consts: constTable, status: statusTable, checks: checkTable, layouts: map[string]*layout{}, sources: map[string]string{}}
	var err error
	if g.release, err = readRelease(src); err != nil {
		return err
	}
	if !strings.HasPrefix(g.release, supportedRelease+".") {
		return fmt.Errorf("%s is release %s; the package supports %s", src, g.release, supportedRelease)
	}
	read := map[string]bool{}
	for _, h := range headers(g) {
		if read[h] {
			continue
		}
		read[h] = true
		path, text, err := findHeader(src, h)
		if err != nil {
			return err
		}
		g.sources[path] = text
		if err := g.decls.parseHeader(path, text); err != nil {
			return err
		}
	}
	files, err := g.files()
	if err != nil {
		return err
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(out, name), text, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// headers lists the headers the table reads, the macro-only ones first.
func headers(g *gen) []string {
	hs := append([]string(nil), macroHeaders...)
	for _, c := range g.consts {
		hs = append(hs, c.Header)
	}
	for _, s := range g.structs {
		hs = append(hs, s.Header)
	}
	hs = append(hs, statusHeader)
	if g.checks != nil {
		hs = append(hs, checkHeaders...)
	}
	return hs
}

func findHeader(src, h string) (path string, text string, err error) {
	for _, dir := range includeDirs {
		p := filepath.Join(dir, h)
		b, err := os.ReadFile(filepath.Join(src, p))
		if err == nil {
			return filepath.ToSlash(p), string(b), nil
		}
	}
	return "", "", fmt.Errorf("%s: not in %s under %s", h, strings.Join(includeDirs, ", "), src)
}

var versionLine = regexp.MustCompile(`(?m)^NVIDIA_VERSION\s*=\s*(\S+)`)

// readRelease reads the checkout's version from version.mk.
func readRelease(src string) (string, error) {
	b, err := os.ReadFile(filepath.Join(src, "version.mk"))
	if err != nil {
		return "", fmt.Errorf("%s is not a checkout of open-gpu-kernel-modules: %v", src, err)
	}
	m := versionLine.FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("%s/version.mk names no NVIDIA_VERSION", src)
	}
	return string(m[1]), nil
}

// files lays out every table entry and returns the generated files.
func (g *gen) files() (map[string][]byte, error) {
	g.byC = map[string]*structSpec{}
	for _, s := range g.structs {
		if _, dup := g.byC[s.C]; dup {
			return nil, fmt.Errorf("table: %s twice", s.C)
		}
		g.byC[s.C] = s
	}
	var rm, test bytes.Buffer
	header := fmt.Sprintf("// Code generated by rmgen from open-gpu-kernel-modules %s. DO NOT EDIT.\n\n", g.release)
	rm.WriteString(header)
	rm.WriteString("package nvidia\n\nimport \"structs\"\n\n")
	rm.WriteString(wrap("", fmt.Sprintf("The RM's parameter blocks and the arrays' lengths, release %s, as gcc lays them out on x86-64 and arm64. Each struct's padding is explicit. The generator internal/rmgen writes this file (generate.go says how) from its table of structs and names, internal/rmgen/table.go.", supportedRelease)))
	rm.WriteString("\n")
	for _, c := range g.consts {
		v, err := g.decls.eval(c.Macro)
		if err != nil {
			return nil, fmt.Errorf("const %s: %v", c.Go, err)
		}
		if c.Want != 0 && v != c.Want {
			return nil, fmt.Errorf("const %s: %s is %d, the table says %d", c.Go, c.Macro, v, c.Want)
		}
		doc := fmt.Sprintf("%s is %s (%s).", c.Go, c.Macro, c.Header)
		if c.Doc != "" {
			doc += " " + c.Doc
		}
		rm.WriteString(wrap("// ", doc))
		fmt.Fprintf(&rm, "const %s = %d\n\n", c.Go, v)
	}
	test.WriteString(header)
	test.WriteString("package nvidia\n\nimport (\n\t\"reflect\"\n\t\"testing\"\n)\n\n")
	test.WriteString(wrap("// ", "TestGeneratedLayouts checks each generated struct's size and its fields' offsets against the C layout the generator computed."))
	test.WriteString("func TestGeneratedLayouts(t *testing.T) {\n\tfor _, c := range []struct {\n\t\ttyp    reflect.Type\n\t\tsize   uintptr\n\t\tfields []generatedField\n\t}{\n")
	for _, s := range g.structs {
		l, err := g.layoutOf(s)
		if err != nil {
			return nil, err
		}
		doc := fmt.Sprintf("%s mirrors %s (%s), %d bytes on x86-64 and arm64.", s.Go, s.C, s.Header, l.size)
		if s.Doc != "" {
			doc += " " + s.Doc
		}
		rm.WriteString(wrap("// ", doc))
		fmt.Fprintf(&rm, "type %s struct {\n\t_ structs.HostLayout\n", s.Go)
		off := 0
		fmt.Fprintf(&test, "\t\t{reflect.TypeFor[%s](), %d, []generatedField{", s.Go, l.size)
		for i, m := range l.members {
			if m.offset > off {
				fmt.Fprintf(&rm, "\t_ [%d]byte\n", m.offset-off)
			}
			fmt.Fprintf(&rm, "\t%s %s", m.goName, m.goType)
			if m.doc != "" {
				fmt.Fprintf(&rm, " // %s", m.doc)
			}
			rm.WriteString("\n")
			off = m.offset + m.size
			if i > 0 {
				test.WriteString(", ")
			}
			fmt.Fprintf(&test, "{%q, %d}", m.goName, m.offset)
		}
		if l.size > off {
			fmt.Fprintf(&rm, "\t_ [%d]byte\n", l.size-off)
		}
		rm.WriteString("}\n\n")
		test.WriteString("}},\n")
	}
	test.WriteString(`	} {
		if c.typ.Size() != c.size {
			t.Errorf("%s: %d bytes, want %d", c.typ, c.typ.Size(), c.size)
		}
		named := 0
		for i := range c.typ.NumField() {
			if f := c.typ.Field(i); f.Name != "_" {
				named++
			}
		}
		if named != len(c.fields) {
			t.Errorf("%s: %d named fields, want %d", c.typ, named, len(c.fields))
		}
		for _, f := range c.fields {
			sf, ok := c.typ.FieldByName(f.name)
			if !ok {
				t.Errorf("%s has no field %s", c.typ, f.name)
			} else if sf.Offset != f.offset {
				t.Errorf("%s.%s at %d, want %d", c.typ, f.name, sf.Offset, f.offset)
			}
		}
	}
}

type generatedField struct {
	name   string
	offset uintptr
}
`)
	if len(g.checks) > 0 {
		test.WriteString("\n")
		test.WriteString(wrap("// ", "TestConstantsMatchHeaders checks the hand-written constants the generator's check table names against the values of their macros."))
		test.WriteString("func TestConstantsMatchHeaders(t *testing.T) {\n\tfor _, c := range []struct {\n\t\tname string\n\t\tgot  uint64\n\t\twant uint64\n\t\texpr string\n\t}{\n")
		for _, c := range g.checks {
			v, err := g.decls.eval(c.Expr)
			if err != nil {
				return nil, fmt.Errorf("check %s: %v", c.Go, err)
			}
			if v < 0 {
				return nil, fmt.Errorf("check %s: %s is negative", c.Go, c.Expr)
			}
			fmt.Fprintf(&test, "\t\t{%q, %s, %#x, %q},\n", c.Go, c.Go, v, c.Expr)
		}
		test.WriteString("\t} {\n\t\tif c.got != c.want {\n\t\t\tt.Errorf(\"%s = %#x, want %s = %#x\", c.name, c.got, c.expr, c.want)\n\t\t}\n\t}\n}\n")
	}
	st, err := g.statusFile()
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for name, b := range map[string][]byte{
		"zz_rm_generated.go":      rm.Bytes(),
		"zz_rm_generated_test.go": test.Bytes(),
		"zz_status_generated.go":  st,
	} {
		f, err := format.Source(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %v\n%s", name, err, b)
		}
		files[name] = f
	}
	return files, nil
}

// statusLine matches one NV_STATUS_CODE(name, value, text) line; only the
// name and the value are taken.
var statusLine = regexp.MustCompile(`(?m)^\s*NV_STATUS_CODE\(\s*(NV_[A-Z0-9_]+)\s*,\s*(0x[0-9A-Fa-f]+)\s*,`)

// statusFile writes the NV_STATUS names and the Status constants.
func (g *gen) statusFile() ([]byte, error) {
	path, text, err := findHeaderIn(g, statusHeader)
	if err != nil {
		return nil, err
	}
	codes, err := parseStatus(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	byName := map[string]uint32{}
	for _, c := range codes {
		byName[c.name] = c.value
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by rmgen from open-gpu-kernel-modules %s. DO NOT EDIT.\n\n", g.release)
	b.WriteString("package nvidia\n\n")
	b.WriteString(wrap("// ", "Some RM status values (nvstatuscodes.h) the package acts on."))
	b.WriteString("const (\n")
	for _, s := range g.status {
		v, ok := byName[s.C]
		if !ok {
			return nil, fmt.Errorf("%s: no status %s", path, s.C)
		}
		fmt.Fprintf(&b, "\t%s = 0x%08x // %s\n", s.Go, v, s.C)
	}
	b.WriteString(")\n\n")
	b.WriteString(wrap("// ", fmt.Sprintf("statusNames maps each NV_STATUS value of release %s to its name (nvstatuscodes.h).", supportedRelease)))
	b.WriteString("var statusNames = map[uint32]string{\n")
	for _, c := range codes {
		fmt.Fprintf(&b, "\t0x%08X: %q,\n", c.value, c.name)
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

func findHeaderIn(g *gen, h string) (string, string, error) {
	for _, dir := range includeDirs {
		p := filepath.ToSlash(filepath.Join(dir, h))
		if t, ok := g.sources[p]; ok {
			return p, t, nil
		}
	}
	return "", "", fmt.Errorf("%s was not read", h)
}

type statusCode struct {
	name  string
	value uint32
}

// parseStatus reads the NV_STATUS_CODE lines of nvstatuscodes.h: names
// and values, each name and each value once.
func parseStatus(text string) ([]statusCode, error) {
	var codes []statusCode
	names := map[string]bool{}
	values := map[uint32]string{}
	for _, m := range statusLine.FindAllStringSubmatch(stripComments(text), -1) {
		var v uint32
		if _, err := fmt.Sscanf(m[2], "0x%x", &v); err != nil {
			return nil, fmt.Errorf("%s: %v", m[1], err)
		}
		if names[m[1]] {
			return nil, fmt.Errorf("%s twice", m[1])
		}
		if other, ok := values[v]; ok {
			return nil, fmt.Errorf("%s and %s are both 0x%x", other, m[1], v)
		}
		names[m[1]] = true
		values[v] = m[1]
		codes = append(codes, statusCode{m[1], v})
	}
	if len(codes) == 0 {
		return nil, fmt.Errorf("no NV_STATUS_CODE lines")
	}
	return codes, nil
}

// wrap formats text as comment lines of at most 76 columns.
func wrap(prefix, text string) string {
	if prefix == "" {
		prefix = "// "
	}
	var b strings.Builder
	line := prefix
	for _, w := range strings.Fields(text) {
		if len(line) > len(prefix) && len(line)+1+len(w) > 76 {
			b.WriteString(line + "\n")
			line = prefix
		}
		if len(line) > len(prefix) {
			line += " "
		}
		line += w
	}
	b.WriteString(line + "\n")
	return b.String()
}
