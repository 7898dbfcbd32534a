package service

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a bytes.Buffer for a log that goroutines write at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A loss is logged at Error once, however many requests meet it, and the
// standby's device is among those the metrics count.
func TestLossLoggedOnce(t *testing.T) {
	var out lockedBuffer
	log := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	svc := newServiceConfig(t, Config{Open: hostOpener(), Driver: "host", Slots: 4, Standby: true, Log: log})
	srv, _, _ := serveService(t, svc)
	if devs := svc.Devices(); len(devs) != 2 || devs[0] == devs[1] {
		t.Fatalf("Devices with a standby: %v, want the serving device and the standby", devs)
	}
	// Requests meet the loss beside the one that causes it.
	x, y := vectors(300, 1)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_, _, _ = post(ctx, srv.Client(), srv.URL+"/saxpy?a=3", Body(x, y))
			}
		}()
	}
	faultAndRecover(t, srv, "trap")
	cancel()
	wg.Wait()
	if n := strings.Count(out.String(), `level=ERROR msg="device lost"`); n != 1 {
		t.Errorf("the loss logged at Error %d times, want once:\n%s", n, out.String())
	}
}
