package service

import (
	"slices"
	"sync"
	"testing"

	rig "github.com/rig-go/rig/runtime"
)

// TestOpenedGivenEveryDevice: Config.Opened is given each device the
// service opens, as it opens: the first, the standby, each replacement
// and each new standby after a loss.
func TestOpenedGivenEveryDevice(t *testing.T) {
	opens := &openLog{base: hostOpener()}
	var (
		mu     sync.Mutex
		opened []*rig.Device
	)
	svc := newServiceConfig(t, Config{Open: opens.open, Driver: "host", Slots: 2, Standby: true, Opened: func(d *rig.Device) {
		mu.Lock()
		defer mu.Unlock()
		opened = append(opened, d)
	}})
	srv, _, _ := serveService(t, svc)
	for round := range 2 {
		waitSpare(t, svc)
		faultAndRecover(t, srv, faultKinds[round%2])
	}
	waitSpare(t, svc)
	opens.mu.Lock()
	defer opens.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	if len(opens.devs) != 4 || !slices.Equal(opened, opens.devs) {
		t.Fatalf("Opened was given %d devices of the %d opened (%v of %v)", len(opened), len(opens.devs), opened, opens.devs)
	}
}
