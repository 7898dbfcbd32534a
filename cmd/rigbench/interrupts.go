package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Interrupts are the machine's interrupts of its NVIDIA GPUs over a run,
// from /proc/interrupts (the lines the kernel driver names "nvidia"): a
// GPU raises its interrupts on one vector, which one processor serves, and
// a flood of them holds that processor and every goroutine that runs
// there. They count every process's, not the run's alone.
type Interrupts struct {
	Total     uint64  `json:"total"`
	PerSecond float64 `json:"per_s"`
	// BusiestCPU is the processor that served the most of them, and
	// BusiestShare its share.
	BusiestCPU   int     `json:"busiest_cpu"`
	BusiestShare float64 `json:"busiest_share"`
}

// gpuInterruptsFile is where the kernel lists its interrupts.
var gpuInterruptsFile = "/proc/interrupts"

// gpuInterrupts returns the machine's interrupts of its NVIDIA GPUs so
// far, a count a processor, and false where the system lists none (no
// /proc/interrupts, or no such line).
func gpuInterrupts() ([]uint64, bool) {
	f, err := os.Open(gpuInterruptsFile)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	counts, err := parseInterrupts(f, "nvidia")
	return counts, err == nil && counts != nil
}

// parseInterrupts sums, a processor at a time, the counts of the lines of
// a /proc/interrupts listing r whose action (the line's last field) is
// name. It returns nil where no line names it, and an error where the
// listing has no header of processors.
func parseInterrupts(r io.Reader, name string) ([]uint64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	if !sc.Scan() {
		return nil, fmt.Errorf("interrupts: an empty listing")
	}
	cpus := 0
	for _, f := range strings.Fields(sc.Text()) {
		if strings.HasPrefix(f, "CPU") {
			cpus++
		}
	}
	if cpus == 0 {
		return nil, fmt.Errorf("interrupts: no processors in the header %q", sc.Text())
	}
	var sum []uint64
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2+cpus || f[len(f)-1] != name {
			continue
		}
		if sum == nil {
			sum = make([]uint64, cpus)
		}
		for i := range cpus {
			n, err := strconv.ParseUint(f[1+i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("interrupts: line %q: %v", sc.Text(), err)
			}
			sum[i] += n
		}
	}
	return sum, sc.Err()
}

// interruptsBetween is what the counts before and after a run of seconds
// say, or nil where either is missing or the processors differ.
func interruptsBetween(before, after []uint64, seconds float64) *Interrupts {
	if before == nil || after == nil || len(before) != len(after) {
		return nil
	}
	in := &Interrupts{}
	var most uint64
	for i := range after {
		d := after[i] - before[i]
		if after[i] < before[i] {
			d = 0
		}
		in.Total += d
		if d > most {
			most, in.BusiestCPU = d, i
		}
	}
	if in.Total > 0 {
		in.BusiestShare = float64(most) / float64(in.Total)
	}
	if seconds > 0 {
		in.PerSecond = float64(in.Total) / seconds
	}
	return in
}

// text is the report's line of the interrupts.
func (in *Interrupts) text() string {
	s := fmt.Sprintf("  GPU interrupts (the machine's): %s, %s/s", count(float64(in.Total)), count(in.PerSecond))
	if in.Total > 0 {
		s += fmt.Sprintf(", %.0f%% on CPU %d", 100*in.BusiestShare, in.BusiestCPU)
	}
	return s + "\n"
}
