package main

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
)

// maxCPUs bounds the processor numbers of a list (Linux's CPU_SETSIZE).
const maxCPUs = 1024

// startProcs is GOMAXPROCS as the process started: what pinProcess("", 0)
// returns to.
var startProcs = runtime.GOMAXPROCS(0)

// parseCPUs parses a list of processors such as "0-7,16" (as taskset -c
// and cpuset.cpus write them) into their numbers, in the list's order;
// "" is none.
func parseCPUs(list string) ([]int, error) {
	var cpus []int
	if list == "" {
		return nil, nil
	}
	for _, f := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(f, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a || b >= maxCPUs {
			return nil, fmt.Errorf("processors %q: %q is not a processor or a range lo-hi of them (0 to %d)", list, f, maxCPUs-1)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// cpusNote says which processors the two processes ran on, and the
// service's GOGC, where flags chose them.
func cpusNote(o options) string {
	gc := ""
	if o.serverGOGC > 0 {
		gc = fmt.Sprintf("; the service's GOGC %d", o.serverGOGC)
	}
	if o.serverCPUs == "" && o.clientCPUs == "" {
		return gc + "; the service and the load generator share every processor (-server-cpus and -client-cpus part them)"
	}
	or := func(l string) string {
		if l == "" {
			return "any"
		}
		return l
	}
	return fmt.Sprintf("; processors: server %s, client %s%s", or(o.serverCPUs), or(o.clientCPUs), gc)
}
