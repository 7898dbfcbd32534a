package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
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

// irqCounts is a listing's counts of one action: a count a processor
// listed, and the processors' numbers, as the listing's header names them
// ("CPU0 CPU2": an offline processor has no column).
type irqCounts struct {
	counts []uint64
	cpus   []int
}

// gpuInterrupts returns the machine's interrupts of its NVIDIA GPUs so
// far, a count a processor, and false where the system lists none (no
// /proc/interrupts, or no such line).
func gpuInterrupts() (irqCounts, bool) {
	f, err := os.Open(gpuInterruptsFile)
	if err != nil {
		return irqCounts{}, false
	}
	defer f.Close()
	counts, cpus, err := parseInterrupts(f, "nvidia")
	return irqCounts{counts, cpus}, err == nil && counts != nil
}

// parseInterrupts sums, a processor at a time, the counts of the lines of
// a /proc/interrupts listing r whose action (the line's last field) is
// name, and returns them with the number of each column's processor. It
// returns nil counts where no line names it, and an error where the
// listing has no header of processors.
func parseInterrupts(r io.Reader, name string) ([]uint64, []int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	if !sc.Scan() {
		return nil, nil, fmt.Errorf("interrupts: an empty listing")
	}
	var ids []int
	for _, f := range strings.Fields(sc.Text()) {
		if num, ok := strings.CutPrefix(f, "CPU"); ok {
			// The kernel lists the online processors only, each by its
			// number: the column is not the number where one is offline.
			id, err := strconv.Atoi(num)
			if err != nil || id < 0 {
				id = len(ids)
			}
			ids = append(ids, id)
		}
	}
	cpus := len(ids)
	if cpus == 0 {
		return nil, nil, fmt.Errorf("interrupts: no processors in the header %q", sc.Text())
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
				return nil, nil, fmt.Errorf("interrupts: line %q: %v", sc.Text(), err)
			}
			sum[i] += n
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	return sum, ids, nil
}

// interruptsBetween is what the counts before and after a run of seconds
// say, or nil where either is missing or the processors differ.
func interruptsBetween(before, after irqCounts, seconds float64) *Interrupts {
	if before.counts == nil || after.counts == nil || len(before.counts) != len(after.counts) ||
		len(after.cpus) != len(after.counts) || !slices.Equal(before.cpus, after.cpus) {
		return nil
	}
	in := &Interrupts{}
	var most uint64
	for i, a := range after.counts {
		b := before.counts[i]
		d := a - b
		if a < b {
			d = 0
		}
		in.Total += d
		if d > most {
			most, in.BusiestCPU = d, after.cpus[i]
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
