package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// The C headers' declarations, as far as the generator reads them: object
// macros, struct and enum typedefs, and typedef aliases. Everything else in
// a header (functions, unions, conditional blocks) is skipped; a struct the
// table names that uses what the parser does not take is an error rather
// than a guess.

// cField is one member of a C struct.
type cField struct {
	Type  string   // the type's name, such as "NvU32" or "NV_MEMORY_DESC_PARAMS"
	Name  string   // the member's name
	Dims  []string // array dimensions, as C expressions, outermost first
	Align int      // an alignment the member forces (NV_ALIGN_BYTES, NV_DECLARE_ALIGNED), or 0
}

// cStruct is a C struct with the header it is declared in.
type cStruct struct {
	Name   string
	Header string
	Fields []cField
}

// cDecls is what the generator knows of a set of headers.
type cDecls struct {
	macros  map[string]string    // object macros: name to replacement text
	funcs   map[string]funcMacro // function-like macros of one parameter
	structs map[string]*cStruct  // typedef names and "struct tag" to their struct
	enums   map[string]bool      // typedef names of enums
	aliases map[string]string    // typedef T NAME: NAME to T
	where   map[string]string    // typedef names and aliases to their header
}

func newDecls() *cDecls {
	return &cDecls{
		macros:  map[string]string{},
		funcs:   map[string]funcMacro{},
		structs: map[string]*cStruct{},
		enums:   map[string]bool{},
		aliases: map[string]string{},
		where:   map[string]string{},
	}
}

// stripComments removes C comments, keeping line breaks and string literals.
func stripComments(src string) string {
	var b strings.Builder
	for i := 0; i < len(src); {
		switch {
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return b.String()
			}
			for _, c := range src[i : i+2+end+2] {
				if c == '\n' {
					b.WriteByte('\n')
				}
			}
			b.WriteByte(' ')
			i += 2 + end + 2
		case src[i] == '"':
			j := i + 1
			for j < len(src) && src[j] != '"' && src[j] != '\n' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			if j < len(src) {
				j++
			}
			b.WriteString(src[i:min(j, len(src))])
			i = j
		default:
			b.WriteByte(src[i])
			i++
		}
	}
	return b.String()
}

// parseHeader adds the declarations of one header to d.
func (d *cDecls) parseHeader(name, src string) error {
	src = strings.ReplaceAll(stripComments(src), "\\\r\n", " ")
	src = strings.ReplaceAll(src, "\\\n", " ")
	var code strings.Builder
	for _, line := range strings.Split(src, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "#") {
			d.directive(strings.TrimSpace(t[1:]))
			continue
		}
		code.WriteString(line)
		code.WriteByte('\n')
	}
	toks := tokenize(code.String())
	for i := 0; i < len(toks); {
		switch {
		case toks[i] == "typedef":
			n, err := d.typedef(name, toks[i+1:])
			if err != nil {
				return fmt.Errorf("%s: %v", name, err)
			}
			i += 1 + n
		case toks[i] == "struct" && i+2 < len(toks) && isIdent(toks[i+1]) && toks[i+2] == "{":
			s, n, err := parseBody(name, toks[i+2:])
			if err != nil {
				return fmt.Errorf("%s: struct %s: %v", name, toks[i+1], err)
			}
			if s != nil {
				s.Name = "struct " + toks[i+1]
				d.structs[s.Name] = s
			}
			i += 2 + n
		default:
			// Braces outside a declaration (extern "C", function bodies)
			// are stepped through, not skipped: an extern "C" block's
			// closing brace sits in a conditional the parser drops.
			i++
		}
	}
	return nil
}

// directive takes an object macro's definition; other directives are dropped.
func (d *cDecls) directive(t string) {
	rest, ok := strings.CutPrefix(t, "define")
	if !ok || rest == "" || !unicode.IsSpace(rune(rest[0])) {
		return
	}
	rest = strings.TrimSpace(rest)
	end := 0
	for end < len(rest) && isIdentByte(rest[end]) {
		end++
	}
	if end == 0 {
		return
	}
	if end < len(rest) && rest[end] == '(' {
		// A function-like macro: only those of one parameter are kept.
		rp := strings.IndexByte(rest, ')')
		param := strings.TrimSpace(rest[end+1 : max(rp, end+1)])
		if rp < 0 || !isIdent(param) || strings.ContainsAny(param, ", ") {
			return
		}
		d.funcs[rest[:end]] = funcMacro{param: param, body: strings.TrimSpace(rest[rp+1:])}
		return
	}
	d.macros[rest[:end]] = strings.TrimSpace(rest[end:])
}

// funcMacro is a function-like macro of one parameter. Where a header
// defines one in several conditional branches, the last definition holds:
// the headers put Linux's last.
type funcMacro struct{ param, body string }

// fieldRange matches a bit field macro's "hi:lo".
var fieldRange = regexp.MustCompile(`^\(?\s*(\d+)\s*:\s*(\d+)\s*\)?$`)

// typedef reads the declaration after "typedef" and returns the tokens it
// took, through its semicolon.
func (d *cDecls) typedef(header string, toks []string) (int, error) {
	semi := func(from int) int {
		for j := from; j < len(toks); j++ {
			if toks[j] == "{" {
				j += skipBalanced(toks[j:]) - 1
				continue
			}
			if toks[j] == ";" {
				return j + 1
			}
		}
		return len(toks)
	}
	if len(toks) == 0 {
		return 0, nil
	}
	kind := toks[0]
	if kind == "struct" || kind == "enum" || kind == "union" {
		i := 1
		tag := ""
		if i < len(toks) && isIdent(toks[i]) {
			tag = toks[i]
			i++
		}
		if i >= len(toks) || toks[i] != "{" {
			// typedef struct tag NAME;
			n := semi(0)
			if tag != "" && n >= 3 && isIdent(toks[n-2]) {
				d.aliases[toks[n-2]] = kind + " " + tag
				d.where[toks[n-2]] = header
			}
			return n, nil
		}
		var s *cStruct
		var n int
		if kind == "struct" {
			var err error
			s, n, err = parseBody(header, toks[i:])
			if err != nil {
				return 0, fmt.Errorf("struct %s: %v", tag, err)
			}
		} else {
			n = skipBalanced(toks[i:])
			if kind == "enum" {
				d.enumValues(toks[i : i+n])
			}
		}
		i += n
		end := semi(i)
		// The names declared after the closing brace: NAME, *PNAME, ...
		for j := i; j < end; j++ {
			if !isIdent(toks[j]) || (j > i && toks[j-1] == "*") {
				continue
			}
			d.where[toks[j]] = header
			switch kind {
			case "struct":
				if s != nil {
					c := *s
					c.Name = toks[j]
					d.structs[toks[j]] = &c
				}
			case "enum":
				d.enums[toks[j]] = true
			}
		}
		if tag != "" {
			switch kind {
			case "struct":
				if s != nil {
					c := *s
					c.Name = "struct " + tag
					d.structs[c.Name] = &c
				}
			case "enum":
				d.enums["enum "+tag] = true
			}
		}
		return end, nil
	}
	end := semi(0)
	// typedef T NAME; (no function pointers, no arrays)
	if end >= 3 && isIdent(toks[end-2]) && !strings.Contains(strings.Join(toks[:end], " "), "(") {
		if t := strings.Join(toks[:end-2], " "); !strings.Contains(t, "*") && !strings.Contains(t, "[") {
			d.aliases[toks[end-2]] = t
			d.where[toks[end-2]] = header
		}
	}
	return end, nil
}

// enumValues records an enum's members as macros of their values, as far
// as they evaluate.
func (d *cDecls) enumValues(toks []string) {
	if len(toks) < 2 {
		return
	}
	next := int64(0)
	for _, m := range splitTop(toks[1:len(toks)-1], ",") {
		if len(m) == 0 || !isIdent(m[0]) {
			return
		}
		if len(m) > 2 && m[1] == "=" {
			v, err := d.eval(strings.Join(m[2:], " "))
			if err != nil {
				return
			}
			next = v
		} else if len(m) != 1 {
			return
		}
		d.macros[m[0]] = strconv.FormatInt(next, 10)
		next++
	}
}

// splitTop splits tokens at sep outside parentheses.
func splitTop(toks []string, sep string) [][]string {
	var out [][]string
	depth, start := 0, 0
	for i, t := range toks {
		switch t {
		case "(":
			depth++
		case ")":
			depth--
		case sep:
			if depth == 0 {
				out = append(out, toks[start:i])
				start = i + 1
			}
		}
	}
	if start < len(toks) {
		out = append(out, toks[start:])
	}
	return out
}

// parseBody reads a struct's braced member list and returns the struct (nil
// where it holds something the parser does not take) and the tokens taken.
func parseBody(header string, toks []string) (*cStruct, int, error) {
	n := skipBalanced(toks)
	if n < 2 || toks[n-1] != "}" {
		return nil, n, nil // unclosed
	}
	body := toks[1 : n-1]
	s := &cStruct{Header: header}
	for len(body) > 0 {
		j := 0
		for j < len(body) && body[j] != ";" {
			if body[j] == "{" {
				// A nested struct or union: this struct is not for the table.
				return nil, n, nil
			}
			j++
		}
		decl := body[:j]
		if j < len(body) {
			j++
		}
		body = body[j:]
		if len(decl) == 0 {
			continue
		}
		fs, err := parseMember(decl)
		if err != nil {
			return nil, n, nil
		}
		s.Fields = append(s.Fields, fs...)
	}
	return s, n, nil
}

// parseMember reads one member declaration, such as
// "NvU64 offset NV_ALIGN_BYTES ( 8 )" or
// "NV_DECLARE_ALIGNED ( NvU64 base , 8 )" or "NvU32 a , b [ 4 ]".
func parseMember(decl []string) ([]cField, error) {
	align := 0
	if decl[0] == "NV_DECLARE_ALIGNED" {
		if len(decl) < 6 || decl[1] != "(" || decl[len(decl)-1] != ")" || decl[len(decl)-3] != "," {
			return nil, fmt.Errorf("NV_DECLARE_ALIGNED: %q", decl)
		}
		a, err := strconv.Atoi(decl[len(decl)-2])
		if err != nil {
			return nil, err
		}
		align = a
		decl = decl[2 : len(decl)-3]
	}
	var kept []string
	for i := 0; i < len(decl); i++ {
		switch decl[i] {
		case "NV_ALIGN_BYTES":
			if i+3 >= len(decl) || decl[i+1] != "(" || decl[i+3] != ")" {
				return nil, fmt.Errorf("NV_ALIGN_BYTES: %q", decl)
			}
			a, err := strconv.Atoi(decl[i+2])
			if err != nil {
				return nil, err
			}
			align = a
			i += 3
		case "const", "volatile":
		default:
			kept = append(kept, decl[i])
		}
	}
	decl = kept
	// The type is the run of identifiers before the first member's name,
	// such as "NvU32", "struct tag" or "unsigned int".
	i := 0
	for i < len(decl) && isIdent(decl[i]) {
		i++
	}
	if i < 2 {
		return nil, fmt.Errorf("member %q", decl)
	}
	typ := decl[:i-1]
	i--
	if typ[0] == "union" {
		return nil, fmt.Errorf("member %q: unions are not taken", decl)
	}
	var out []cField
	for i < len(decl) {
		if decl[i] == "*" || decl[i] == ":" || decl[i] == "(" {
			return nil, fmt.Errorf("member %q: pointers and bit-fields are not taken", decl)
		}
		if !isIdent(decl[i]) {
			return nil, fmt.Errorf("member %q", decl)
		}
		f := cField{Type: strings.Join(typ, " "), Name: decl[i], Align: align}
		i++
		for i < len(decl) && decl[i] == "[" {
			j := i + 1
			for j < len(decl) && decl[j] != "]" {
				j++
			}
			if j >= len(decl) {
				return nil, fmt.Errorf("member %q: unclosed [", decl)
			}
			f.Dims = append(f.Dims, strings.Join(decl[i+1:j], " "))
			i = j + 1
		}
		out = append(out, f)
		if i < len(decl) {
			if decl[i] != "," {
				return nil, fmt.Errorf("member %q", decl)
			}
			i++
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("member %q has no name", decl)
	}
	return out, nil
}

// skipBalanced returns the tokens from an opening brace through its match.
func skipBalanced(toks []string) int {
	depth := 0
	for i, t := range toks {
		switch t {
		case "{":
			depth++
		case "}":
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return len(toks)
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isIdent(t string) bool {
	return t != "" && isIdentByte(t[0]) && !(t[0] >= '0' && t[0] <= '9')
}

// tokenize splits C text into identifiers, numbers, string literals and
// punctuation (the two-character shift operators as one token).
func tokenize(src string) []string {
	var toks []string
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case isIdentByte(c):
			j := i
			for j < len(src) && (isIdentByte(src[j]) || (src[i] >= '0' && src[i] <= '9' && src[j] == '.')) {
				j++
			}
			toks = append(toks, src[i:j])
			i = j
		case c == '"':
			j := i + 1
			for j < len(src) && src[j] != '"' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(src))
			toks = append(toks, src[i:j])
			i = j
		case c == '\'' && i+2 < len(src) && src[i+2] == '\'' && src[i+1] != '\\':
			toks = append(toks, src[i:i+3])
			i += 3
		case strings.HasPrefix(src[i:], "<<") || strings.HasPrefix(src[i:], ">>"):
			toks = append(toks, src[i:i+2])
			i += 2
		default:
			toks = append(toks, src[i:i+1])
			i++
		}
	}
	return toks
}

// eval evaluates an integer constant expression of macros, numbers,
// parentheses, casts to the Nv integer types, and + - * / % << >> | & ~.
func (d *cDecls) eval(expr string) (int64, error) {
	budget := maxEvalSteps
	p := &exprParser{d: d, toks: tokenize(expr), budget: &budget}
	v, err := p.or(0)
	if err != nil {
		return 0, fmt.Errorf("%q: %v", expr, err)
	}
	if p.i != len(p.toks) {
		return 0, fmt.Errorf("%q: trailing %q", expr, p.toks[p.i:])
	}
	return v, nil
}

type exprParser struct {
	d      *cDecls
	toks   []string
	i      int
	budget *int // the terms left to evaluate, shared with the macros' parsers
}

// maxMacroDepth bounds the nesting of macros, and maxEvalSteps the terms of
// one expression with its macros expanded.
const (
	maxMacroDepth = 32
	maxEvalSteps  = 1 << 16
)

func (p *exprParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

var binaryLevels = [][]string{{"|"}, {"&"}, {"<<", ">>"}, {"+", "-"}, {"*", "/", "%"}}

func (p *exprParser) or(depth int) (int64, error) { return p.level(0, depth) }

func (p *exprParser) level(l, depth int) (int64, error) {
	if l == len(binaryLevels) {
		return p.unary(depth)
	}
	v, err := p.level(l+1, depth)
	if err != nil {
		return 0, err
	}
	for {
		op := p.peek()
		found := false
		for _, o := range binaryLevels[l] {
			if o == op {
				found = true
			}
		}
		if !found {
			return v, nil
		}
		p.i++
		w, err := p.level(l+1, depth)
		if err != nil {
			return 0, err
		}
		switch op {
		case "|":
			v |= w
		case "&":
			v &= w
		case "<<":
			if w < 0 || w > 63 {
				return 0, fmt.Errorf("shift by %d", w)
			}
			v <<= uint(w)
		case ">>":
			if w < 0 || w > 63 {
				return 0, fmt.Errorf("shift by %d", w)
			}
			v >>= uint(w)
		case "+":
			v += w
		case "-":
			v -= w
		case "*":
			v *= w
		case "/", "%":
			if w == 0 {
				return 0, fmt.Errorf("division by zero")
			}
			if op == "/" {
				v /= w
			} else {
				v %= w
			}
		}
	}
}

func (p *exprParser) unary(depth int) (int64, error) {
	if depth > maxMacroDepth {
		return 0, fmt.Errorf("macros nest too deep")
	}
	if *p.budget--; *p.budget < 0 {
		return 0, fmt.Errorf("expression too large")
	}
	t := p.peek()
	p.i++
	switch {
	case t == "":
		return 0, fmt.Errorf("unexpected end")
	case t == "-" || t == "~" || t == "+":
		v, err := p.unary(depth)
		switch t {
		case "-":
			v = -v
		case "~":
			v = ^v
		}
		return v, err
	case t == "(":
		// A cast to an integer type is dropped.
		if p.i+1 < len(p.toks) && p.toks[p.i+1] == ")" && isCastType(p.toks[p.i]) {
			p.i += 2
			return p.unary(depth)
		}
		v, err := p.or(depth)
		if err != nil {
			return 0, err
		}
		if p.peek() != ")" {
			return 0, fmt.Errorf("missing )")
		}
		p.i++
		return v, nil
	case len(t) == 3 && t[0] == '\'' && t[2] == '\'':
		return int64(t[1]), nil
	case t[0] >= '0' && t[0] <= '9':
		s := strings.TrimRight(t, "uUlL")
		v, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			return 0, err
		}
		return int64(v), nil
	case isIdent(t) && p.peek() == "(":
		// lo(FIELD), the low bit of a bit field macro's hi:lo, or a
		// function-like macro's call with one argument.
		start := p.i + 1
		end := start
		for depth := 1; end < len(p.toks); end++ {
			if p.toks[end] == "(" {
				depth++
			} else if p.toks[end] == ")" {
				if depth--; depth == 0 {
					break
				}
			}
		}
		if end >= len(p.toks) {
			return 0, fmt.Errorf("%s: missing )", t)
		}
		arg := p.toks[start:end]
		p.i = end + 1
		if t == "lo" {
			if len(arg) != 1 {
				return 0, fmt.Errorf("lo takes one macro")
			}
			m := fieldRange.FindStringSubmatch(p.d.macros[arg[0]])
			if m == nil {
				return 0, fmt.Errorf("%s is not a bit field hi:lo", arg[0])
			}
			return strconv.ParseInt(m[2], 10, 64)
		}
		fm, ok := p.d.funcs[t]
		if !ok {
			return 0, fmt.Errorf("unknown function-like macro %s", t)
		}
		var body []string
		for _, b := range tokenize(fm.body) {
			if b == fm.param {
				body = append(body, "(")
				body = append(body, arg...)
				body = append(body, ")")
				continue
			}
			body = append(body, b)
		}
		sub := &exprParser{d: p.d, toks: body, budget: p.budget}
		v, err := sub.or(depth + 1)
		if err != nil {
			return 0, fmt.Errorf("%s: %v", t, err)
		}
		if sub.i != len(sub.toks) {
			return 0, fmt.Errorf("%s: trailing %q", t, sub.toks[sub.i:])
		}
		return v, nil
	case isIdent(t):
		m, ok := p.d.macros[t]
		if !ok {
			return 0, fmt.Errorf("unknown name %s", t)
		}
		sub := &exprParser{d: p.d, toks: tokenize(m), budget: p.budget}
		v, err := sub.or(depth + 1)
		if err != nil {
			return 0, fmt.Errorf("%s: %v", t, err)
		}
		if sub.i != len(sub.toks) {
			return 0, fmt.Errorf("%s: trailing %q", t, sub.toks[sub.i:])
		}
		return v, nil
	}
	return 0, fmt.Errorf("unexpected %q", t)
}

func isCastType(t string) bool {
	if _, ok := scalars[t]; ok {
		return true
	}
	return false
}
