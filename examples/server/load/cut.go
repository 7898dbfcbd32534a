package main

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"
)

// cutter holds the connections that the clients of a level (or of the
// recoveries) dial, so that the end of the load test's context, its first
// SIGINT or SIGTERM, closes them all at once: a request in flight on one
// fails then, rather than waiting out requestTimeout on a service that
// does not answer, and no connection is dialed after. A request that
// failed at or after the cut was cancelled, not refused by the service,
// and the level counts it neither as served nor as failed (cutBy).
type cutter struct {
	ctx   context.Context
	mu    sync.Mutex
	at    time.Time // when the cut came; zero before it
	conns map[*cutConn]struct{}
}

// errCut is the error of a dial after the cut.
var errCut = errors.New("the load test was interrupted")

// newCutter returns a cutter that cuts once ctx ends, and the function
// that releases it from ctx, to be called once its connections are
// closed.
func newCutter(ctx context.Context) (*cutter, func()) {
	k := &cutter{ctx: ctx, conns: map[*cutConn]struct{}{}}
	stop := context.AfterFunc(ctx, k.cut)
	return k, func() { stop() }
}

// dial dials addr on network, as net.Dialer.DialContext does, within
// requestTimeout, until ctx or the cutter's context ends; after the cut
// it refuses.
func (k *cutter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(k.ctx, cancel)
	defer stop()
	d := net.Dialer{Timeout: requestTimeout}
	conn, err := d.DialContext(dctx, network, addr)
	if err != nil {
		if k.ctx.Err() != nil {
			// The cut may not have come yet, from context.AfterFunc's
			// goroutine: it comes now, before the error, so that cutBy
			// counts the error as the cut's.
			k.cut()
			return nil, errCut
		}
		return nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.at.IsZero() {
		_ = conn.Close()
		return nil, errCut
	}
	c := &cutConn{Conn: conn, k: k}
	k.conns[c] = struct{}{}
	return c, nil
}

// cut closes the cutter's connections, and refuses its dials from now
// on; a second cut does nothing.
func (k *cutter) cut() {
	k.mu.Lock()
	if !k.at.IsZero() {
		k.mu.Unlock()
		return
	}
	k.at = time.Now()
	conns := k.conns
	k.conns = nil
	k.mu.Unlock()
	for c := range conns {
		_ = c.Conn.Close()
	}
}

// cutBy returns whether the cut came at or before t: a request that
// failed at t was cancelled by it.
func (k *cutter) cutBy(t time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return !k.at.IsZero() && !t.Before(k.at)
}

// cutConn is a connection of a cutter, which leaves it once closed.
type cutConn struct {
	net.Conn
	k *cutter
}

func (c *cutConn) Close() error {
	c.k.mu.Lock()
	delete(c.k.conns, c) // a no-op on the nil map of a cutter that cut
	c.k.mu.Unlock()
	return c.Conn.Close()
}
