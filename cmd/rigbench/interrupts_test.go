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
			got, _, err := parseInterrupts(strings.NewReader(c.in), c.action)
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
	if !ok || !reflect.DeepEqual(got, irqCounts{[]uint64{12, 0, 0, 86691}, []int{0, 1, 2, 3}}) {
		t.Errorf("gpuInterrupts = %v, %v", got, ok)
	}
}

// irqs is counts of the processors 0 to len(counts)-1.
func irqs(counts ...uint64) irqCounts {
	if counts == nil {
		return irqCounts{}
	}
	c := irqCounts{counts: counts}
	for i := range counts {
		c.cpus = append(c.cpus, i)
	}
	return c
}

func TestInterruptsBetween(t *testing.T) {
	in := interruptsBetween(irqs(12, 0, 5, 100), irqs(12, 10, 5, 130), 2)
	want := &Interrupts{Total: 40, PerSecond: 20, BusiestCPU: 3, BusiestShare: 0.75}
	if !reflect.DeepEqual(in, want) {
		t.Errorf("interruptsBetween = %+v, want %+v", in, want)
	}
	if got := in.text(); got != "  GPU interrupts (the machine's): 40, 20/s, 75% on CPU 3\n" {
		t.Errorf("text %q", got)
	}
	if in := interruptsBetween(irqs(1), irqs(1), 1); in.text() != "  GPU interrupts (the machine's): 0, 0/s\n" {
		t.Errorf("none: %q", in.text())
	}
	for _, c := range [][2]irqCounts{{irqs(), irqs(1)}, {irqs(1), irqs()}, {irqs(1), irqs(1, 2)},
		{irqs(1, 2), {[]uint64{1, 2}, []int{0, 2}}}} {
		if in := interruptsBetween(c[0], c[1], 1); in != nil {
			t.Errorf("interruptsBetween(%v, %v) = %+v, want nil", c[0], c[1], in)
		}
	}
	// A counter that went back (a vector freed and made again) counts 0.
	if in := interruptsBetween(irqs(5, 1), irqs(2, 4), 1); in.Total != 3 || in.BusiestCPU != 1 {
		t.Errorf("a counter that went back: %+v", in)
	}
}

// TestInterruptsOfflineCPU reads a listing whose header leaves out an
// offline processor, as the kernel lists the online ones only: the
// busiest processor is named by its number, not by its column.
func TestInterruptsOfflineCPU(t *testing.T) {
	const offline = `           CPU0       CPU2       CPU3       
 44:         12          5      86691  PCI-MSIX-0000:00:06.0   2-edge      nvidia
`
	before, cpus, err := parseInterrupts(strings.NewReader(strings.ReplaceAll(offline, "86691", "691")), "nvidia")
	if err != nil {
		t.Fatal(err)
	}
	after, _, err := parseInterrupts(strings.NewReader(offline), "nvidia")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cpus, []int{0, 2, 3}) {
		t.Errorf("the header's processors %v, want [0 2 3]", cpus)
	}
	in := interruptsBetween(irqCounts{before, cpus}, irqCounts{after, cpus}, 1)
	if in == nil || in.BusiestCPU != 3 || in.Total != 86000 {
		t.Errorf("interruptsBetween = %+v, want 86000 on CPU 3", in)
	}
}

// FuzzParseInterrupts checks that any listing parses without a panic, and
// that counts, where there are any, come one a processor of the header.
func FuzzParseInterrupts(f *testing.F) {
	f.Add(listing)
	f.Add("  CPU0\n 42: 1 x nvidia\n")
	f.Add("CPU0 CPU1\n42: 18446744073709551615 1 a nvidia\n")
	f.Fuzz(func(t *testing.T, in string) {
		got, ids, err := parseInterrupts(strings.NewReader(in), "nvidia")
		if err != nil || got == nil {
			return
		}
		if len(ids) != len(got) {
			t.Errorf("%d counts for %d processors' numbers", len(got), len(ids))
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
