package nvidia

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// VendorNVIDIA is NVIDIA's PCI vendor ID.
const VendorNVIDIA = 0x10de

// IsGPU reports whether a PCI function of vendor vendor and 24-bit class code
// class is an NVIDIA GPU: NVIDIA's vendor and a display controller (base
// class 0x03, which holds VGA 0x0300 and 3D 0x0302 controllers).
//
// Every path numbers a machine's NVIDIA GPUs 0, 1, … in bus order among such
// functions, whichever kernel driver holds each, so GPU i of one path is GPU
// i of every other.
func IsGPU(vendor uint16, class uint32) bool {
	return vendor == VendorNVIDIA && class>>16 == 0x03
}

// PCIAddress is a PCI function's bus address.
type PCIAddress struct {
	Domain              uint32
	Bus, Slot, Function uint8
}

// String is the address as Linux names it, such as "0000:41:00.0".
func (a PCIAddress) String() string {
	return fmt.Sprintf("%04x:%02x:%02x.%x", a.Domain, a.Bus, a.Slot, a.Function)
}

// ParsePCIAddress parses a bus address such as "0000:41:00.0".
func ParsePCIAddress(s string) (PCIAddress, error) {
	bad := fmt.Errorf("nvidia: %q is not a PCI bus address", s)
	dom, rest, ok := strings.Cut(s, ":")
	if !ok {
		return PCIAddress{}, bad
	}
	bus, rest, ok := strings.Cut(rest, ":")
	if !ok {
		return PCIAddress{}, bad
	}
	slot, fn, ok := strings.Cut(rest, ".")
	if !ok {
		return PCIAddress{}, bad
	}
	d, err1 := strconv.ParseUint(dom, 16, 32)
	b, err2 := strconv.ParseUint(bus, 16, 8)
	sl, err3 := strconv.ParseUint(slot, 16, 5)
	f, err4 := strconv.ParseUint(fn, 16, 3)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || len(bus) != 2 || len(slot) != 2 || len(fn) != 1 {
		return PCIAddress{}, bad
	}
	return PCIAddress{Domain: uint32(d), Bus: uint8(b), Slot: uint8(sl), Function: uint8(f)}, nil
}

// compare orders addresses in bus order.
func (a PCIAddress) compare(b PCIAddress) int {
	return cmp.Or(cmp.Compare(a.Domain, b.Domain), cmp.Compare(a.Bus, b.Bus),
		cmp.Compare(a.Slot, b.Slot), cmp.Compare(a.Function, b.Function))
}

// sysfsPCI is where Linux lists the machine's PCI functions.
const sysfsPCI = "/sys/bus/pci/devices"

// ListGPUs lists the machine's NVIDIA GPUs in bus order, as dir (Linux's
// /sys/bus/pci/devices) shows them, whichever driver holds each.
func ListGPUs(dir string) ([]PCIAddress, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var gpus []PCIAddress
	for _, e := range ents {
		a, err := ParsePCIAddress(e.Name())
		if err != nil {
			continue
		}
		vendor, err1 := readHex(filepath.Join(dir, e.Name(), "vendor"))
		class, err2 := readHex(filepath.Join(dir, e.Name(), "class"))
		if err1 != nil || err2 != nil {
			continue
		}
		if IsGPU(uint16(vendor), uint32(class)) {
			gpus = append(gpus, a)
		}
	}
	slices.SortFunc(gpus, PCIAddress.compare)
	return gpus, nil
}

// readHex reads a sysfs file that holds one number such as "0x10de".
func readHex(name string) (uint64, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	return strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 32)
}
