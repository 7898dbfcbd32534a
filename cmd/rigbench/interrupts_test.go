package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// listing is /proc/interrupts as the H200's virtual machine shows it, cut
// to four processors: the GPU's vectors, named nvidia, and others.
const listing = `           CPU0       CPU1       CPU2       CPU3       
  1:          9          0          0          0  IO-APIC   1-edge      i8042
 42:          0          0          0          0  PCI-MSIX-0000:00:06.0   0-edge      nvidia
 43:          0          0          0          0  PCI-MSIX-0000:00:06.0   1-edge      nvidia
 44:         12          0          0      86691  PCI-MSIX-0000:00:06.0   2-edge      nvidia
 45:          3          0          0          0  PCI-MSIX-0000:00:07.0   0-edge      virtio0
NMI:          0          0          0          0   Non-maskable interrupts
LOC:     312234     301238     289123     299934   Local timer interrupts
ERR:          0
MIS:          0
`

func TestParseInterrupts(t *testing.T) {
	for _, c := range []struct {
		name, in, action string
		want             []uint64
		err              bool
	}{
		{"nvidia", listing, "nvidia", []uint64{12, 0, 0, 86691}, false},
		{"another action", listing, "virtio0", []uint64{3, 0, 0, 0}, false},
		{"no such line", listing, "amdgpu", nil, false},
		{"empty", "", "nvidia", nil, true},
		{"no processors", "hello\n 42: 1 2 nvidia\n", "nvidia", nil, true},
		{"bad count", "  CPU0 CPU1\n 42: 1 x PCI edge nvidia\n", "nvidia", nil, true},
		{"short line", "  CPU0 CPU1\n 42: 1 nvidia\n", "nvidia", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseInterrupts(strings.NewReader(c.in), c.action)
			if (err != nil) != c.err {
				t.Fatalf("error %v, want one: %v", err, c.err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("parseInterrupts = %v, want %v", got, c.want)
			}
		})
	}
}

func TestGPUInterruptsFile(t *testing.T) {
	defer func(f string) { gpuInterruptsFile = f }(gpuInterruptsFile)
	gpuInterruptsFile = filepath.Join(t.TempDir(), "interrupts")
	if _, ok := gpuInterrupts(); ok {
		t.Error("counts from a file that is not there")
	}
	if err := os.WriteFile(gpuInterruptsFile, []byte(listing), 0o644); err != nil {
		t.Fatal(err)
	}
	got, ok := gpuInterrupts()
	if !ok || !reflect.DeepEqual(got, []uint64{12, 0, 0, 86691}) {
		t.Errorf("gpuInterrupts = %v, %v", got, ok)
	}
}

func TestInterruptsBetween(t *testing.T) {
	in := interruptsBetween([]uint64{12, 0, 5, 100}, []uint64{12, 10, 5, 130}, 2)
	want := &Interrupts{Total: 40, PerSecond: 20, BusiestCPU: 3, BusiestShare: 0.75}
	if !reflect.DeepEqual(in, want) {
		t.Errorf("interruptsBetween = %+v, want %+v", in, want)
	}
	if got := in.text(); got != "  GPU interrupts (the machine's): 40, 20/s, 75% on CPU 3\n" {
		t.Errorf("text %q", got)
	}
	if in := interruptsBetween([]uint64{1}, []uint64{1}, 1); in.text() != "  GPU interrupts (the machine's): 0, 0/s\n" {
		t.Errorf("none: %q", in.text())
	}
	for _, c := range [][2][]uint64{{nil, {1}}, {{1}, nil}, {{1}, {1, 2}}} {
		if in := interruptsBetween(c[0], c[1], 1); in != nil {
			t.Errorf("interruptsBetween(%v, %v) = %+v, want nil", c[0], c[1], in)
		}
	}
	// A counter that went back (a vector freed and made again) counts 0.
	if in := interruptsBetween([]uint64{5, 1}, []uint64{2, 4}, 1); in.Total != 3 || in.BusiestCPU != 1 {
		t.Errorf("a counter that went back: %+v", in)
	}
}

// FuzzParseInterrupts checks that any listing parses without a panic, and
// that counts, where there are any, come one a processor of the header.
func FuzzParseInterrupts(f *testing.F) {
	f.Add(listing)
	f.Add("  CPU0\n 42: 1 x nvidia\n")
	f.Add("CPU0 CPU1\n42: 18446744073709551615 1 a nvidia\n")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := parseInterrupts(strings.NewReader(in), "nvidia")
		if err != nil || got == nil {
			return
		}
		header, _, _ := strings.Cut(in, "\n")
		cpus := 0
		for _, w := range strings.Fields(header) {
			if strings.HasPrefix(w, "CPU") {
				cpus++
			}
		}
		if len(got) != cpus {
			t.Errorf("%d counts for %d processors", len(got), cpus)
		}
	})
}
