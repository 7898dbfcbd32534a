package main

import (
	"fmt"
	"strings"
)

// scalar is a C scalar type of the RM's headers as x86-64 and arm64 lay it
// out, and the Go type that holds it.
type scalar struct {
	size, align int
	goType      string
}

// scalars are the C types the generator lays out without a declaration.
// NvP64 holds a user address; on 64-bit hosts it is a pointer, so a uint64.
var scalars = map[string]scalar{
	"NvU8":            {1, 1, "uint8"},
	"NvS8":            {1, 1, "int8"},
	"NvV8":            {1, 1, "uint8"},
	"NvBool":          {1, 1, "uint8"},
	"char":            {1, 1, "byte"},
	"unsigned char":   {1, 1, "uint8"},
	"NvU16":           {2, 2, "uint16"},
	"NvS16":           {2, 2, "int16"},
	"NvV16":           {2, 2, "uint16"},
	"NvU32":           {4, 4, "uint32"},
	"NvS32":           {4, 4, "int32"},
	"NvV32":           {4, 4, "uint32"},
	"NV_STATUS":       {4, 4, "uint32"},
	"int":             {4, 4, "int32"},
	"unsigned":        {4, 4, "uint32"},
	"unsigned int":    {4, 4, "uint32"},
	"NvHandle":        {4, 4, "Handle"},
	"NvU64":           {8, 8, "uint64"},
	"NvS64":           {8, 8, "int64"},
	"NvV64":           {8, 8, "uint64"},
	"NvP64":           {8, 8, "uint64"},
	"NvLength":        {8, 8, "uint64"},
	"NvUPtr":          {8, 8, "uint64"},
	"NvProcessorUuid": {16, 1, "UUID"},
}

// member is a struct member laid out: its offset, and the Go spelling of
// its type.
type member struct {
	c      cField
	goName string
	goType string
	doc    string
	offset int
	size   int
}

// layout is a C struct laid out as gcc does on x86-64 and arm64.
type layout struct {
	spec    *structSpec
	c       *cStruct
	members []member
	size    int
	align   int
}

// typeOf resolves a C type name through typedef aliases to a scalar, an
// enum or a struct; it returns the size, alignment and Go spelling.
func (g *gen) typeOf(name string) (size, align int, goType string, err error) {
	seen := map[string]bool{}
	for {
		if s, ok := scalars[name]; ok {
			return s.size, s.align, s.goType, nil
		}
		if g.decls.enums[name] {
			return 4, 4, "uint32", nil
		}
		if spec, ok := g.byC[name]; ok {
			l, err := g.layoutOf(spec)
			if err != nil {
				return 0, 0, "", err
			}
			return l.size, l.align, spec.Go, nil
		}
		if _, ok := g.decls.structs[name]; ok {
			return 0, 0, "", fmt.Errorf("struct %s is not in the table", name)
		}
		a, ok := g.decls.aliases[name]
		if !ok || seen[name] {
			return 0, 0, "", fmt.Errorf("unknown type %s", name)
		}
		seen[name] = true
		name = a
	}
}

// layoutOf lays out the C struct a table entry names, once.
func (g *gen) layoutOf(spec *structSpec) (*layout, error) {
	if l, ok := g.layouts[spec.Go]; ok {
		if l == nil {
			return nil, fmt.Errorf("%s contains itself", spec.C)
		}
		return l, nil
	}
	g.layouts[spec.Go] = nil
	if h := g.decls.where[spec.C]; !strings.HasSuffix(h, "/"+spec.Header) {
		return nil, fmt.Errorf("%s: declared in %q, the table says %s", spec.C, h, spec.Header)
	}
	// The struct itself, through typedef aliases.
	name := spec.C
	cs, ok := g.decls.structs[name]
	for i := 0; !ok && i < 8; i++ {
		if name, ok = g.decls.aliases[name]; !ok {
			break
		}
		cs, ok = g.decls.structs[name]
	}
	if !ok {
		return nil, fmt.Errorf("%s: no struct of that name in %s (or the parser does not take it)", spec.C, spec.Header)
	}
	l := &layout{spec: spec, c: cs, align: 1}
	used := map[string]bool{}
	names := map[string]bool{}
	off := 0
	for _, f := range cs.Fields {
		size, align, goType, err := g.typeOf(f.Type)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %v", spec.C, f.Name, err)
		}
		var dims string
		for _, d := range f.Dims {
			n, err := g.decls.eval(d)
			if err != nil {
				return nil, fmt.Errorf("%s.%s: %v", spec.C, f.Name, err)
			}
			if n <= 0 || n > 1<<20 {
				return nil, fmt.Errorf("%s.%s: array of %d", spec.C, f.Name, n)
			}
			size *= int(n)
			ds := fmt.Sprint(n)
			if c, ok := g.constFor(d); ok {
				ds = c
			}
			dims += "[" + ds + "]"
		}
		goType = dims + goType
		if f.Align > align {
			align = f.Align
		}
		off = alignUp(off, align)
		m := member{c: f, goName: goName(f), goType: goType, offset: off, size: size}
		if fs, ok := spec.field(f.Name); ok {
			used[f.Name] = true
			if fs.Go != "" {
				m.goName = fs.Go
			}
			if fs.Type != "" {
				m.goType = dims + fs.Type
			}
			m.doc = fs.Doc
		}
		if names[m.goName] {
			return nil, fmt.Errorf("%s: two fields named %s", spec.C, m.goName)
		}
		names[m.goName] = true
		l.members = append(l.members, m)
		off += size
		l.align = max(l.align, align)
	}
	for _, fs := range spec.Fields {
		if !used[fs.C] {
			return nil, fmt.Errorf("%s has no member %s", spec.C, fs.C)
		}
	}
	l.size = alignUp(off, l.align)
	if spec.Size != 0 && spec.Size != l.size {
		return nil, fmt.Errorf("%s: %d bytes, the table says %d", spec.C, l.size, spec.Size)
	}
	g.layouts[spec.Go] = l
	return l, nil
}

// constFor returns the Go constant the table gives an array dimension
// that is exactly one macro.
func (g *gen) constFor(dim string) (string, bool) {
	for _, c := range g.consts {
		if c.Macro == strings.TrimSpace(dim) {
			return c.Go, true
		}
	}
	return "", false
}

func alignUp(n, a int) int { return (n + a - 1) / a * a }

// initialisms are the words Go spells in capitals.
var initialisms = map[string]string{
	"id": "ID", "gpu": "GPU", "cpu": "CPU", "fd": "FD", "uuid": "UUID", "va": "VA",
	"dma": "DMA", "pci": "PCI", "rm": "RM", "sm": "SM", "sms": "SMs", "mmu": "MMU",
	"pc": "PC", "iv": "IV", "tpc": "TPC", "hmac": "HMAC", "gid": "GID", "fb": "FB",
	"gr": "GR", "numa": "Numa", "url": "URL", "pasid": "PASID", "uvm": "UVM",
}

// goName spells a C member's name in Go's style: the handle, bool and
// pointer prefixes (hObject, bEnable, pMemory) dropped, camel case split
// into words, initialisms in capitals.
func goName(f cField) string {
	n := f.Name
	if len(n) > 1 && n[1] >= 'A' && n[1] <= 'Z' {
		switch {
		case n[0] == 'h' && f.Type == "NvHandle",
			n[0] == 'b' && f.Type == "NvBool",
			n[0] == 'p' && f.Type == "NvP64":
			n = n[1:]
		}
	}
	var words []string
	start := 0
	for i := 1; i <= len(n); i++ {
		if i == len(n) || n[i] == '_' ||
			(n[i] >= 'A' && n[i] <= 'Z' && !(n[i-1] >= 'A' && n[i-1] <= 'Z')) {
			if i > start {
				words = append(words, n[start:i])
			}
			start = i
			if i < len(n) && n[i] == '_' {
				start++
			}
		}
	}
	var b strings.Builder
	for _, w := range words {
		if in, ok := initialisms[strings.ToLower(w)]; ok {
			b.WriteString(in)
			continue
		}
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String()
}
