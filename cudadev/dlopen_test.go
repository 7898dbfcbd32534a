package cudadev

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestDlopenReason checks that a load of libraries that are not there
// returns an error that gives each one's reason, naming it, every time,
// from many goroutines at once: dlerror's message is the failing thread's,
// and a goroutine that moved to another thread between dlopen and dlerror
// read a blank or another load's reason.
func TestDlopenReason(t *testing.T) {
	const goroutines, loads = 16, 300
	var wg sync.WaitGroup
	bad := make(chan string, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range loads {
				names := []string{fmt.Sprintf("librig-absent-%d-%d.so.1", g, i), fmt.Sprintf("librig-absent-%d-%d.so", g, i)}
				_, err := dlopenFirst(names)
				if err == nil {
					bad <- fmt.Sprintf("%v loaded", names)
					return
				}
				for _, n := range names {
					if !strings.Contains(err.Error(), n+":") {
						bad <- fmt.Sprintf("load %d of goroutine %d: %q gives no reason for %s", i, g, err, n)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(bad)
	for s := range bad {
		t.Error(s)
	}
}
