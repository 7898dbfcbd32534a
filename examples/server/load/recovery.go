package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// recovery is one loss: the time from the faulting request's send to its
// answer (503), which is how long the driver took to report the fault, and
// to the first right answer after.
type recovery struct{ seen, served time.Duration }

// recoveries loses the service's device n times, with a kernel that
// faults in the way kind names (POST /debug/fault?kind=kind), and returns
// each loss's recovery. It leaves the lost device a second to give
// everything back before the next fault. Where ctx ends, it cancels its
// request in flight (cutter) and returns the recoveries so far and no
// error.
func recoveries(ctx context.Context, addr string, req, want []byte, n int, kind string) ([]recovery, error) {
	k, release := newCutter(ctx)
	defer release()
	cl := newClient(addr, req)
	cl.cut = k
	defer cl.close()
	fault := newClient(addr, request(addr, "/debug/fault?kind="+kind, nil))
	fault.cut = k
	defer fault.close()
	var out []recovery
	for range n {
		if ctx.Err() != nil {
			return out, nil
		}
		start := time.Now()
		code, body, err := fault.do()
		seen := time.Since(start)
		if ctx.Err() != nil {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("the faulting request: %w", err)
		}
		if code != http.StatusServiceUnavailable {
			return out, fmt.Errorf("the faulting request answered %d %q", code, body)
		}
		for {
			code, got, err := cl.do()
			if ctx.Err() != nil {
				return out, nil
			}
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
		out = append(out, recovery{seen: seen, served: time.Since(start)})
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return out, nil
}
