package main

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// recoveries loses the service's device n times, with a kernel that
// faults in the way kind names (POST /debug/fault?kind=kind), and returns for each loss the time from the
// faulting request until the service answered a saxpy (req) with want
// again. It leaves the lost device a second to give everything back
// before the next fault.
func recoveries(addr string, req, want []byte, n int, kind string) ([]time.Duration, error) {
	cl := newClient(addr, req)
	defer cl.close()
	fault := newClient(addr, request(addr, "/debug/fault?kind="+kind, nil))
	defer fault.close()
	var out []time.Duration
	for range n {
		start := time.Now()
		code, body, err := fault.do()
		if err != nil {
			return out, fmt.Errorf("the faulting request: %w", err)
		}
		if code != http.StatusServiceUnavailable {
			return out, fmt.Errorf("the faulting request answered %d %q", code, body)
		}
		for {
			code, got, err := cl.do()
			if err == nil && code == http.StatusOK && bytes.Equal(got, want) {
				break
			}
			if err == nil && code != http.StatusServiceUnavailable {
				return out, fmt.Errorf("during the recovery: %d %q", code, got)
			}
			if time.Since(start) > 10*time.Second {
				return out, errors.New("the service did not serve again within 10 s of a fault")
			}
			time.Sleep(50 * time.Microsecond)
		}
		out = append(out, time.Since(start))
		time.Sleep(time.Second)
	}
	return out, nil
}
