package hostdev

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// magic is the first line of every manifest.
const magic = "rig-hostdev image 1"

// Limits of a manifest.
const (
	maxManifest = 1 << 20 // bytes
	maxKernels  = 4096
	maxName     = 256
	maxPlace    = 1 << 30
)

// manifest is a parsed image binary.
type manifest struct {
	kernels []mkernel
	place   int // bytes rig places the image in, 0 for none
}

// mkernel is one kernel a manifest names.
type mkernel struct {
	name   string
	params int // -1 where the manifest states none
}

// ImageOf is the image binary of a manifest that names the given kernels.
// Each is a registered kernel's name, or "name:n" where the kernel reads n
// parameter bytes. It panics on a malformed spec, as a programming error.
//
// The manifest is text: the line "rig-hostdev image 1", then a line
// "kernel NAME" or "kernel NAME PARAMS" for each kernel, and optionally
// a line "place N" (PlacedImageOf). Blank lines and lines that start
// with '#' are ignored.
func ImageOf(kernels ...string) []byte { return imageOf(0, kernels) }

// PlacedImageOf is ImageOf for an image that rig places: Image returns
// Code{Place: place}, and the image loads once rig lays it into place bytes
// of Device memory.
func PlacedImageOf(place int, kernels ...string) []byte {
	if place <= 0 || place > maxPlace {
		panic(fmt.Sprintf("hostdev: place %d outside 1 to %d", place, maxPlace))
	}
	return imageOf(place, kernels)
}

func imageOf(place int, kernels []string) []byte {
	var b strings.Builder
	b.WriteString(magic + "\n")
	for _, k := range kernels {
		name, params, hasParams := strings.Cut(k, ":")
		if err := checkName(name); err != nil {
			panic("hostdev: ImageOf: " + err.Error())
		}
		b.WriteString("kernel " + name)
		if hasParams {
			n, err := strconv.Atoi(params)
			if err != nil || n < 0 || n > MaxParams {
				panic(fmt.Sprintf("hostdev: ImageOf: kernel %q: parameter bytes %q not a count from 0 to %d", name, params, MaxParams))
			}
			b.WriteString(" " + strconv.Itoa(n))
		}
		b.WriteString("\n")
	}
	if place > 0 {
		b.WriteString("place " + strconv.Itoa(place) + "\n")
	}
	return []byte(b.String())
}

// checkName says why name is no valid kernel name: a name is 1 to 256
// bytes of letters, digits and "_.$", and starts with no digit.
func checkName(name string) error {
	if name == "" {
		return errors.New("empty kernel name")
	}
	if len(name) > maxName {
		return fmt.Errorf("kernel name of %d bytes, over %d", len(name), maxName)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '.', c == '$':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return fmt.Errorf("kernel name %q has %q at byte %d: a name is letters, digits and \"_.$\", starting with no digit", name, c, i)
		}
	}
	return nil
}

// parseManifest parses an image binary. Its errors name the line at fault.
func parseManifest(b []byte) (*manifest, error) {
	if len(b) > maxManifest {
		return nil, fmt.Errorf("image of %d bytes, over the %d a manifest may hold", len(b), maxManifest)
	}
	text := string(b)
	first, rest, _ := strings.Cut(text, "\n")
	if strings.TrimSuffix(first, "\r") != magic {
		return nil, fmt.Errorf("not a hostdev image: the first line is not %q", magic)
	}
	m := &manifest{}
	seen := make(map[string]bool)
	for n := 2; rest != ""; n++ {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		line = strings.TrimSuffix(line, "\r")
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("manifest line %d: %s", n, fmt.Sprintf(format, args...))
		}
		switch f[0] {
		case "kernel":
			if len(f) < 2 || len(f) > 3 {
				return nil, bad("want \"kernel NAME [PARAMS]\", have %d words", len(f))
			}
			if err := checkName(f[1]); err != nil {
				return nil, bad("%v", err)
			}
			if seen[f[1]] {
				return nil, bad("kernel %q named twice", f[1])
			}
			if len(m.kernels) == maxKernels {
				return nil, bad("more than %d kernels", maxKernels)
			}
			k := mkernel{name: f[1], params: -1}
			if len(f) == 3 {
				p, err := strconv.Atoi(f[2])
				if err != nil || p < 0 || p > MaxParams {
					return nil, bad("kernel %q: parameter bytes %q not a count from 0 to %d", f[1], f[2], MaxParams)
				}
				k.params = p
			}
			seen[f[1]] = true
			m.kernels = append(m.kernels, k)
		case "place":
			if len(f) != 2 {
				return nil, bad("want \"place N\", have %d words", len(f))
			}
			if m.place != 0 {
				return nil, bad("place stated twice")
			}
			p, err := strconv.Atoi(f[1])
			if err != nil || p <= 0 || p > maxPlace {
				return nil, bad("place %q not a count of bytes from 1 to %d", f[1], maxPlace)
			}
			m.place = p
		default:
			return nil, bad("unknown directive %q: want kernel or place", f[0])
		}
	}
	return m, nil
}
