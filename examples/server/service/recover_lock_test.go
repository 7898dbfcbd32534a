package service

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	rig "github.com/rig-go/rig/runtime"
)

// loseNow loses b's device with its faulting kernel, as a request to
// /debug/fault does, without HTTP.
func loseNow(t *testing.T, b *backend) {
	t.Helper()
	sl := <-b.free
	p, err := b.fault.Take().Submit(context.Background(), sl.x)
	if err == nil {
		err = p.Wait(context.Background())
	}
	b.free <- sl
	if !errors.Is(err, rig.ErrLost) {
		t.Fatalf("the faulting kernel: %v, want the device's loss", err)
	}
}

// TestLossRecoveredWithoutRequests: the service recovers from a loss of
// the serving device with no request to meet it, also where the device's
// watcher finds the recovery's lock held by a request that called recover
// with a backend it loaded before an earlier move: every exit that held
// the lock looks again for a lost device.
func TestLossRecoveredWithoutRequests(t *testing.T) {
	srv, svc, _ := serveStandby(t, 2, "host", hostOpener())
	waitSpare(t, svc)
	stale := svc.cur.Load()
	loseNow(t, stale) // the first loss: the standby serves
	for round := range 40 {
		// Wait for a healthy device serving and a healthy standby.
		var cur *backend
		for start := time.Now(); ; time.Sleep(time.Millisecond) {
			cur = svc.cur.Load()
			sp := svc.spare.Load()
			if cur.dev.Err() == nil && sp != nil && sp != cur && sp.dev.Err() == nil {
				break
			}
			if time.Since(start) > 10*time.Second {
				t.Fatalf("round %d: no healthy device and standby 10 s after the last loss", round)
			}
		}
		// Requests that loaded the stale backend before the move call
		// take's recover(stale) while the new loss happens.
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
					svc.recover(stale)
				}
			}
		}()
		loseNow(t, cur)
		time.Sleep(20 * time.Millisecond)
		close(stop)
		<-done
		// No request comes: the watcher alone must move the service off
		// the lost device.
		deadline := time.Now().Add(2 * time.Second)
		for svc.cur.Load() == cur && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if svc.cur.Load() == cur {
			resp, err := srv.Client().Get(srv.URL + "/readyz")
			code := 0
			if err == nil {
				code = resp.StatusCode
				resp.Body.Close()
			}
			t.Fatalf("round %d: 2 s after its device's loss, with no request, the service still serves on the lost device %s (/readyz %d, want %d once recovered): the loss's recovery was dropped", round, cur.dev.Name(), code, http.StatusOK)
		}
	}
}

// TestStandbyLossReplacedWithoutRequests: as the serving device's, a lost
// standby is replaced on its seat with no request to meet the loss, also
// where its watcher finds the recovery's lock held.
func TestStandbyLossReplacedWithoutRequests(t *testing.T) {
	_, svc, _ := serveStandby(t, 2, "host", hostOpener())
	waitSpare(t, svc)
	stale := svc.cur.Load()
	loseNow(t, stale) // the first loss: the standby serves
	for round := range 40 {
		var sp *backend
		for start := time.Now(); ; time.Sleep(time.Millisecond) {
			cur := svc.cur.Load()
			sp = svc.spare.Load()
			if cur.dev.Err() == nil && sp != nil && sp != cur && sp.dev.Err() == nil {
				break
			}
			if time.Since(start) > 10*time.Second {
				t.Fatalf("round %d: no healthy device and standby 10 s after the last loss", round)
			}
		}
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
					svc.recover(stale)
				}
			}
		}()
		loseNow(t, sp)
		time.Sleep(20 * time.Millisecond)
		close(stop)
		<-done
		deadline := time.Now().Add(2 * time.Second)
		for svc.spare.Load() == sp && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if svc.spare.Load() == sp {
			t.Fatalf("round %d: 2 s after the standby %s was lost, it is still the service's standby: its replacement was dropped", round, sp.dev.Name())
		}
	}
}
