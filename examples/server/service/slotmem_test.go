package service

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// TestSlotsPastMemory: where the device's memory holds fewer slots than
// Config.Slots, a request that finds every slot made in use waits for one
// to come free, as it does at the bound: /saxpy answers 503 busy with
// Retry-After rather than 500 with the allocation's error, and Saxpy
// waits while its context allows.
func TestSlotsPastMemory(t *testing.T) {
	name := fmt.Sprintf("server-test-%d", names.Add(1))
	// Room for the slot the service makes as it opens, and not for a
	// second.
	open := func(ctx context.Context, seat int) (*rig.Device, error) {
		return rig.Open(ctx, hostdev.Open(hostdev.Config{Name: fmt.Sprintf("%s/%d", name, seat), Budget: 3 * 4 * MaxElements}))
	}
	srv, svc, _ := serveService(t, newServiceConfig(t, Config{Open: open, Driver: "host", Slots: 4, SlotWait: 10 * time.Millisecond}))
	x, y := vectors(16, 1)
	// A call that holds the only slot until release closes.
	entered, release, held := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		held <- svc.Saxpy(context.Background(), 2, len(x), func(xb, yb []byte) error {
			close(entered)
			<-release
			copy(xb, Body(x, nil))
			copy(yb, Body(y, nil))
			return nil
		}, func([]byte) {})
	}()
	<-entered
	for range 2 {
		code, body, err := post(context.Background(), srv.Client(), srv.URL+"/saxpy?a=2", Body(x, y))
		if err != nil || code != http.StatusServiceUnavailable || !strings.Contains(string(body), "busy") {
			t.Errorf("a saxpy while the slot the memory holds is in use: %d %q %v, want 503 busy", code, body, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := svc.Saxpy(ctx, 2, len(x), func([]byte, []byte) error { return nil }, func([]byte) {}); !errors.Is(err, context.Canceled) {
		t.Errorf("Saxpy while the slot the memory holds is in use, its context ended: %v, want the context's error", err)
	}
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	code, got, err := post(context.Background(), srv.Client(), srv.URL+"/saxpy?a=2", Body(x, y))
	if err != nil || code != 200 || !slices.Equal(floats(got), Saxpy(2, x, y)) {
		t.Fatalf("a saxpy once the slot came free: %d %v", code, err)
	}
}
