package service

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var names atomic.Int64

// serve starts the service on a host device of a fresh name behind an
// httptest server; both end with the test. active counts the handlers
// running.
func serve(t *testing.T, slots int) (*httptest.Server, *Service, *atomic.Int64) {
	t.Helper()
	return serveOn(t, slots, hostOpener())
}

// serveOn is serve with the host devices open returns.
func serveOn(t *testing.T, slots int, open func(context.Context, int) (*rig.Device, error)) (*httptest.Server, *Service, *atomic.Int64) {
	t.Helper()
	return serveDriver(t, slots, "host", open)
}

// serveDriver is serve with the devices of driver that open returns.
func serveDriver(t *testing.T, slots int, driver string, open func(context.Context, int) (*rig.Device, error)) (*httptest.Server, *Service, *atomic.Int64) {
	t.Helper()
	return serveService(t, newService(t, slots, driver, open))
}

// serveStandby is serveDriver with a standby device (Config.Standby).
func serveStandby(t *testing.T, slots int, driver string, open func(context.Context, int) (*rig.Device, error)) (*httptest.Server, *Service, *atomic.Int64) {
	t.Helper()
	return serveService(t, newServiceConfig(t, Config{Open: open, Driver: driver, Slots: slots, Standby: true}))
}

// serveService serves svc behind an httptest server, which ends with the
// test. active counts the handlers running. The server keeps an idle
// connection for a minute, as the command's keeps one for two: a test
// that sees a connection closed within less sees the service close it.
func serveService(t *testing.T, svc *Service) (*httptest.Server, *Service, *atomic.Int64) {
	t.Helper()
	var active atomic.Int64
	h := svc.Handler()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		active.Add(1)
		defer active.Add(-1)
		h.ServeHTTP(w, r)
	}))
	srv.Config.IdleTimeout = time.Minute
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, svc, &active
}

// hostOpener opens host devices of fresh names, one for each seat.
func hostOpener() func(context.Context, int) (*rig.Device, error) {
	name := fmt.Sprintf("server-test-%d", names.Add(1))
	return func(ctx context.Context, seat int) (*rig.Device, error) {
		return rig.Open(ctx, hostdev.Open(hostdev.Config{Name: fmt.Sprintf("%s/%d", name, seat)}))
	}
}

// hostService opens the service on the host devices open returns; it is
// closed when the test ends.
func hostService(t *testing.T, slots int, open func(context.Context, int) (*rig.Device, error)) *Service {
	t.Helper()
	return newService(t, slots, "host", open)
}

// newService opens the service on the devices of driver that open
// returns, with /debug; it is closed when the test ends.
func newService(t *testing.T, slots int, driver string, open func(context.Context, int) (*rig.Device, error)) *Service {
	t.Helper()
	return newServiceConfig(t, Config{Open: open, Driver: driver, Slots: slots})
}

// newServiceConfig opens the service of c with its debug handlers; it is
// closed when the test ends.
func newServiceConfig(t *testing.T, c Config) *Service {
	t.Helper()
	c.Debug = true
	svc, err := NewService(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := svc.Close(context.Background()); err != nil {
			t.Errorf("closing the service: %v", err)
		}
	})
	return svc
}

func post(ctx context.Context, c *http.Client, url string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func floats(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func vectors(n int, base float32) (x, y []float32) {
	x, y = make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = base+float32(i), float32(2*i)-base
	}
	return x, y
}

func TestSaxpy(t *testing.T) {
	srv, _, _ := serve(t, 4)
	for _, n := range []int{1, 255, 256, 1024, MaxElements} {
		x, y := vectors(n, float32(n))
		code, got, err := post(context.Background(), srv.Client(), srv.URL+"/saxpy?a=2.5", Body(x, y))
		if err != nil || code != 200 {
			t.Fatalf("n=%d: %d %s %v", n, code, got, err)
		}
		if want := Saxpy(2.5, x, y); !slices.Equal(floats(got), want) {
			t.Fatalf("n=%d: the answer differs from the host's", n)
		}
	}
	for _, c := range []struct {
		name, query string
		body        []byte
		want        int
	}{
		{"no a", "", make([]byte, 8), 400},
		{"an empty body", "?a=1", nil, 400},
		{"an odd body", "?a=1", make([]byte, 12), 400},
		{"too long a body", "?a=1", make([]byte, 8*MaxElements+8), 400},
	} {
		code, _, err := post(context.Background(), srv.Client(), srv.URL+"/saxpy"+c.query, c.body)
		if err != nil || code != c.want {
			t.Errorf("%s: %d (%v), want %d", c.name, code, err, c.want)
		}
	}
}

// TestConcurrent: many clients at once each get their own answer.
func TestConcurrent(t *testing.T) {
	srv, _, _ := serve(t, 16)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 64 {
		wg.Go(func() {
			for i := range 20 {
				x, y := vectors(100+g, float32(g*100+i))
				code, got, err := post(context.Background(), srv.Client(), srv.URL+"/saxpy?a=-1.5", Body(x, y))
				if err != nil || code != 200 || !slices.Equal(floats(got), Saxpy(-1.5, x, y)) {
					errs <- fmt.Errorf("client %d request %d: %d %v", g, i, code, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestClientGoesAway: a client that disconnects while its work runs frees
// its handler's goroutine at once; the work's slot comes back once the
// work ends.
func TestClientGoesAway(t *testing.T) {
	srv, _, active := serve(t, 2)
	clientGoesAway(t, srv, active, 500*time.Millisecond, 20)
}

// clientGoesAway sends tries requests that spin for spin on the device,
// each from a client that goes away 2 ms after its handler starts, and
// fails the test where the handlers outlived their clients by more than
// 1 ms at the median.
func clientGoesAway(t *testing.T, srv *httptest.Server, active *atomic.Int64, spin time.Duration, tries int) {
	t.Helper()
	var took []time.Duration
	url := fmt.Sprintf("%s/debug/spin?us=%d", srv.URL, spin.Microseconds())
	for range tries {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _, _ = post(ctx, srv.Client(), url, nil)
		}()
		for active.Load() == 0 {
			time.Sleep(50 * time.Microsecond)
		}
		time.Sleep(2 * time.Millisecond)
		start := time.Now()
		cancel()
		for active.Load() != 0 {
			if time.Since(start) > 5*time.Second {
				t.Fatal("the handler of a client that went away still runs after 5 s")
			}
			time.Sleep(10 * time.Microsecond)
		}
		took = append(took, time.Since(start))
		<-done
	}
	slices.Sort(took)
	t.Logf("handler freed after the client went away: median %v, max %v (%d tries)", took[len(took)/2], took[len(took)-1], tries)
	if med := took[len(took)/2]; med > time.Millisecond {
		t.Errorf("the median handler outlived its client by %v, more than 1 ms", med)
	}
}

// TestFaultRecovery: a faulting kernel of each kind loses the device;
// requests answer 503 with the cause, and the service reopens the device
// and serves again. A kind it has no kernel for answers 400 and loses
// nothing.
func TestFaultRecovery(t *testing.T) {
	srv, svc, _ := serve(t, 4)
	c := srv.Client()
	for _, kind := range []string{"", "address", "trap"} {
		faultAndRecover(t, srv, kind)
	}
	code, body, err := post(context.Background(), c, srv.URL+"/debug/fault?kind=overflow", nil)
	if err != nil || code != 400 || !strings.Contains(string(body), "overflow") {
		t.Fatalf("a fault of an unknown kind: %d %q %v", code, body, err)
	}
	if err := svc.cur.Load().dev.Err(); err != nil {
		t.Fatalf("a fault of an unknown kind lost the device: %v", err)
	}
	if !svc.healthy.Load() {
		t.Fatal("the host driver's service reports itself unhealthy after a recovery")
	}
	resp, err := c.Get(srv.URL + "/readyz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("readyz after the recovery: %v %v", resp, err)
	}
	resp.Body.Close()
}

// faultKinds are /debug/fault's kinds: a write outside any allocation
// (the memory unit's fault) and a trap (the compute engine's exception).
var faultKinds = [2]string{"address", "trap"}

// faultAndRecover loses the service's device with a faulting kernel of
// kind (/debug/fault's; "" is the default), and returns once the service
// serves right answers again.
func faultAndRecover(t *testing.T, srv *httptest.Server, kind string) {
	t.Helper()
	c := srv.Client()
	url := srv.URL + "/debug/fault"
	if kind != "" {
		url += "?kind=" + kind
	}
	code, body, err := post(context.Background(), c, url, nil)
	if err != nil || code != 503 || !strings.Contains(string(body), "lost") {
		t.Fatalf("the faulting request (%q): %d %q %v", kind, code, body, err)
	}
	start := time.Now()
	x, y := vectors(300, 1)
	for {
		code, got, err := post(context.Background(), c, srv.URL+"/saxpy?a=3", Body(x, y))
		if err != nil {
			t.Fatal(err)
		}
		if code == 200 {
			if !slices.Equal(floats(got), Saxpy(3, x, y)) {
				t.Fatal("a wrong answer after the recovery")
			}
			break
		}
		if code != 503 {
			t.Fatalf("during the recovery: %d %s", code, got)
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("the service did not serve again within 10 s of the fault")
		}
		time.Sleep(100 * time.Microsecond)
	}
	t.Logf("served again %v after the fault (%q)", time.Since(start), kind)
}

// TestRecoveryOrder: after a loss the service opens the replacement on
// the other seat while the lost device is still open (lost, not closed),
// and closes the lost device after: it gives everything back (Done), and
// its error is still the loss. Twice, so that the seats alternate.
func TestRecoveryOrder(t *testing.T) {
	opens := &openLog{base: hostOpener()}
	srv, svc, _ := serveOn(t, 4, opens.open)
	checkRecoveryOrder(t, srv, svc, opens, 2)
}

// openLog records the devices an opener opened, and at each open after
// the first the answer of the device opened last to an Alloc: its loss
// where it is lost and not yet closed, ErrClosed once it is closed.
type openLog struct {
	base func(context.Context, int) (*rig.Device, error)

	mu     sync.Mutex
	devs   []*rig.Device
	seats  []int
	probes []error
}

func (l *openLog) open(ctx context.Context, seat int) (*rig.Device, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.devs); n > 0 {
		b, err := l.devs[n-1].Alloc(rig.PinnedMemory, 64)
		if err == nil {
			_ = b.Free()
		}
		l.probes = append(l.probes, err)
	}
	d, err := l.base(ctx, seat)
	if err == nil {
		l.devs, l.seats = append(l.devs, d), append(l.seats, seat)
	}
	return d, err
}

// checkRecoveryOrder faults the service's device rounds times and checks
// each recovery: the replacement opened on the other seat while the lost
// device was lost and not closed, the service runs on it, and the lost
// device was closed after and gave everything back. The faults alternate
// between the kinds (faultKinds).
func checkRecoveryOrder(t *testing.T, srv *httptest.Server, svc *Service, l *openLog, rounds int) {
	t.Helper()
	for round := range rounds {
		faultAndRecover(t, srv, faultKinds[round%2])
		l.mu.Lock()
		if len(l.devs) != round+2 {
			l.mu.Unlock()
			t.Fatalf("round %d: %d devices opened, want %d", round, len(l.devs), round+2)
		}
		lost, next, probe := l.devs[round], l.devs[round+1], l.probes[round]
		if l.seats[round+1] != 1-l.seats[round] {
			t.Errorf("round %d: the replacement opened on seat %d after seat %d", round, l.seats[round+1], l.seats[round])
		}
		l.mu.Unlock()
		if !errors.Is(probe, rig.ErrLost) || errors.Is(probe, rig.ErrClosed) {
			t.Errorf("round %d: at the replacement's open, the lost device answered %v, want its loss (not closed)", round, probe)
		}
		if svc.cur.Load().dev != next {
			t.Errorf("round %d: the service does not run on the replacement", round)
		}
		start := time.Now()
		select {
		case <-lost.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the lost device did not give everything back within 10 s", round)
		}
		t.Logf("round %d: %s served, %s gave everything back %v later", round, next.Name(), lost.Name(), time.Since(start))
		if err := lost.Err(); !errors.Is(err, rig.ErrLost) {
			t.Errorf("round %d: the lost device's error after its close: %v", round, err)
		}
		if _, err := lost.Alloc(rig.PinnedMemory, 64); !errors.Is(err, rig.ErrClosed) {
			t.Errorf("round %d: the lost device was not closed: Alloc returned %v", round, err)
		}
	}
}

// TestStandbyRecovery: with a standby device, a loss moves the requests
// to the standby, opened before the fault, with no open between the loss
// and the first right answer; the lost device is closed and gives
// everything back, and a new standby opens on its seat. Three rounds, so
// that the seats alternate.
func TestStandbyRecovery(t *testing.T) {
	opens := &openLog{base: hostOpener()}
	srv, svc, _ := serveStandby(t, 4, "host", opens.open)
	checkStandbyRecovery(t, srv, svc, opens, 3)
}

// checkStandbyRecovery faults the service's device rounds times and checks
// each recovery by the standby, with faults of both kinds in turn.
func checkStandbyRecovery(t *testing.T, srv *httptest.Server, svc *Service, l *openLog, rounds int) {
	t.Helper()
	l.mu.Lock()
	if !slices.Equal(l.seats, []int{0, 1}) {
		t.Fatalf("the service opened seats %v, want 0, then the standby on 1", l.seats)
	}
	l.mu.Unlock()
	for round := range rounds {
		lost, spare := svc.cur.Load(), waitSpare(t, svc)
		faultAndRecover(t, srv, faultKinds[round%2])
		// The standby, open before the fault, serves.
		if cur := svc.cur.Load(); cur != spare {
			t.Fatalf("round %d: the service serves on %s, want the standby %s", round, cur.dev.Name(), spare.dev.Name())
		}
		select {
		case <-lost.dev.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the lost device did not give everything back within 10 s", round)
		}
		if err := lost.dev.Err(); !errors.Is(err, rig.ErrLost) {
			t.Errorf("round %d: the lost device's error after its close: %v", round, err)
		}
		next := waitSpare(t, svc)
		if next.seat != lost.seat || next == lost {
			t.Errorf("round %d: the new standby is on seat %d, want %d, the lost device's", round, next.seat, lost.seat)
		}
		if next.dev.Err() != nil {
			t.Errorf("round %d: the new standby: %v", round, next.dev.Err())
		}
	}
}

// waitSpare returns the service's standby, waiting up to 10 s for it to
// open.
func waitSpare(t *testing.T, svc *Service) *backend {
	t.Helper()
	for start := time.Now(); ; time.Sleep(100 * time.Microsecond) {
		if sp := svc.spare.Load(); sp != nil {
			return sp
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("no standby device 10 s after the service opened or recovered")
		}
	}
}

// TestStandbyLost: a loss of the idle standby replaces the standby on its
// seat; the service serves on throughout.
func TestStandbyLost(t *testing.T) {
	srv, svc, _ := serveStandby(t, 4, "host", hostOpener())
	cur, sp := svc.cur.Load(), waitSpare(t, svc)
	sl := <-sp.free
	// The host driver may run the kernel before Submit returns, and Submit
	// return the loss.
	p, err := sp.fault.Take().Submit(context.Background(), sl.x)
	if err == nil {
		err = p.Wait(context.Background())
	}
	if !errors.Is(err, rig.ErrLost) {
		t.Fatalf("the standby's faulting kernel: %v, want its loss", err)
	}
	select {
	case <-sp.dev.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the lost standby did not give everything back within 10 s")
	}
	next := waitSpare(t, svc)
	for next == sp {
		time.Sleep(100 * time.Microsecond)
		next = waitSpare(t, svc)
	}
	if next.seat != sp.seat || next.dev.Err() != nil {
		t.Errorf("the new standby: seat %d (want %d), %v", next.seat, sp.seat, next.dev.Err())
	}
	if svc.cur.Load() != cur {
		t.Error("the loss of the standby moved the requests")
	}
	x, y := vectors(100, 2)
	code, got, err := post(context.Background(), srv.Client(), srv.URL+"/saxpy?a=2", Body(x, y))
	if err != nil || code != 200 || !slices.Equal(floats(got), Saxpy(2, x, y)) {
		t.Fatalf("a saxpy after the standby's loss: %d %v", code, err)
	}
}

// TestStandbyReady: /readyz names the standby.
func TestStandbyReady(t *testing.T) {
	srv, svc, _ := serveStandby(t, 2, "host", hostOpener())
	sp := waitSpare(t, svc)
	resp, err := srv.Client().Get(srv.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "standby "+sp.dev.Name()) {
		t.Fatalf("readyz: %d %q, want the standby %s named", resp.StatusCode, body, sp.dev.Name())
	}
}

// TestRecoveryFallback: where the replacement does not open beside the
// lost device, the service closes the lost device first, and opens the
// replacement after.
func TestRecoveryFallback(t *testing.T) {
	name := fmt.Sprintf("server-test-%d", names.Add(1))
	var (
		mu      sync.Mutex
		last    *rig.Device
		refused int
	)
	open := func(ctx context.Context, seat int) (*rig.Device, error) {
		mu.Lock()
		defer mu.Unlock()
		if last != nil {
			select {
			case <-last.Done():
			default:
				refused++
				return nil, errors.New("the GPU holds one device at a time")
			}
		}
		d, err := rig.Open(ctx, hostdev.Open(hostdev.Config{Name: fmt.Sprintf("%s/%d", name, seat)}))
		if err == nil {
			last = d
		}
		return d, err
	}
	srv, _, _ := serveOn(t, 4, open)
	faultAndRecover(t, srv, "")
	mu.Lock()
	defer mu.Unlock()
	if refused != 1 {
		t.Errorf("%d opens refused beside the lost device, want 1", refused)
	}
}

// TestShutdown: Close waits for the requests in flight to end first, under
// http.Server.Shutdown, and then gives the device back.
func TestShutdown(t *testing.T) {
	srv, svc, _ := serve(t, 2)
	done := make(chan int, 1)
	go func() {
		code, _, _ := post(context.Background(), srv.Client(), srv.URL+"/debug/spin?us=100000", nil)
		done <- code
	}()
	time.Sleep(20 * time.Millisecond)
	srv.Config.SetKeepAlivesEnabled(false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Config.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != 200 {
		t.Fatalf("a request in flight at shutdown answered %d", code)
	}
	dev := svc.cur.Load().dev
	if err := svc.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-dev.Done():
	default:
		t.Fatal("Close returned before the device gave everything back")
	}
}

// recorder is a ResponseWriter that keeps the status and the body's bytes
// and allocates nothing per request.
type recorder struct {
	h    http.Header
	code int
	body []byte
}

func (w *recorder) Header() http.Header { return w.h }
func (w *recorder) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}
func (w *recorder) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.body = append(w.body, b...)
	return len(b), nil
}

// The deadlines of net/http's ResponseWriter, which the handler sets; a
// recorder has no connection to time out.
func (w *recorder) SetReadDeadline(time.Time) error  { return nil }
func (w *recorder) SetWriteDeadline(time.Time) error { return nil }

// TestSaxpyHandlerAllocs: the saxpy handler allocates nothing of its own
// per request: the query is parsed in place, and the answer's header
// values are not made per request.
func TestSaxpyHandlerAllocs(t *testing.T) {
	svc := hostService(t, 2, hostOpener())
	x, y := vectors(1024, 3)
	body := Body(x, y)
	want := Body(Saxpy(2, x, y), nil)
	rd := bytes.NewReader(body)
	req := httptest.NewRequest("POST", "/saxpy?a=2", nil)
	req.Body, req.ContentLength = io.NopCloser(rd), int64(len(body))
	w := &recorder{h: http.Header{}, body: make([]byte, 0, len(want))}
	run := func() {
		rd.Reset(body)
		w.code, w.body = 0, w.body[:0]
		svc.handleSaxpy(w, req)
	}
	run()
	if w.code != http.StatusOK || !bytes.Equal(w.body, want) {
		t.Fatalf("%d %q", w.code, w.body)
	}
	if got := w.h.Get("Content-Length"); got != "4096" {
		t.Fatalf("Content-Length %q", got)
	}
	if raceEnabled {
		t.Log("allocations not counted: the race detector allocates")
		return
	}
	if n := testing.AllocsPerRun(200, run); n != 0 {
		t.Errorf("%v allocations a request", n)
	}
}

func TestQueryFloat32(t *testing.T) {
	for _, c := range []struct {
		q    string
		want float32
		ok   bool
	}{
		{"a=2", 2, true},
		{"b=1&a=-1.5", -1.5, true},
		{"a=1e3&a=2", 1000, true},
		{"%61=4", 4, true},
		{"a=%2B4", 4, true},
		{"a=+4", 0, false}, // "+" is a space
		{"a=", 0, false},
		{"a=x", 0, false},
		{"a=%zz", 0, false},
		{"b=1", 0, false},
		{"", 0, false},
		{"a=1e40", 0, false},
		{"a=NaN", 0, false},
		{"a=Inf", 0, false},
		{"a=-inf", 0, false},
		{"a=1e-50", 0, true},
		{"a=3.4e38", 3.4e38, true},
	} {
		got, err := queryFloat32(c.q, "a")
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("%q: %v %v, want %v (ok %v)", c.q, got, err, c.want, c.ok)
		}
	}
}

// TestSaxpyBadA: a /saxpy whose a is missing, no number, out of
// float32's range, NaN or infinite answers 400 with a message that says
// which, and runs nothing.
func TestSaxpyBadA(t *testing.T) {
	srv, _, _ := serve(t, 2)
	x, y := vectors(4, 1)
	for _, c := range []struct{ query, want string }{
		{"", "no parameter a"},
		{"?b=1", "no parameter a"},
		{"?a=", `a="": not a number`},
		{"?a=x", `a="x": not a number`},
		{"?a=%zz", `a="%zz": not a number`},
		{"?a=1e40", `a="1e40": out of float32's range`},
		{"?a=-3.5e38", `a="-3.5e38": out of float32's range`},
		{"?a=NaN", `a="NaN": not a finite number`},
		{"?a=inf", `a="inf": not a finite number`},
		{"?a=-Infinity", `a="-Infinity": not a finite number`},
		{"?a=%2BInf", `a="+Inf": not a finite number`},
	} {
		code, body, err := post(context.Background(), srv.Client(), srv.URL+"/saxpy"+c.query, Body(x, y))
		if err != nil || code != http.StatusBadRequest || !strings.Contains(string(body), c.want) {
			t.Errorf("%q: %d %q %v, want 400 saying %q", c.query, code, body, err, c.want)
		}
	}
}

// TestCloseDuringReopen: Close while a replacement's open after a loss is
// still under way ends that open through its context, rather than waiting
// for the open's own bound to pass while Close holds up the shutdown.
func TestCloseDuringReopen(t *testing.T) {
	name := fmt.Sprintf("server-test-%d", names.Add(1))
	entered := make(chan struct{})
	ended := make(chan error, 1)
	open := func(ctx context.Context, seat int) (*rig.Device, error) {
		if seat == 0 {
			return rig.Open(ctx, hostdev.Open(hostdev.Config{Name: fmt.Sprintf("%s/%d", name, seat)}))
		}
		// The replacement's open hangs until its context ends.
		close(entered)
		<-ctx.Done()
		ended <- ctx.Err()
		return nil, ctx.Err()
	}
	svc, err := NewService(context.Background(), Config{Open: open, Driver: "host", Slots: 2, Debug: true})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	svc.Handler().ServeHTTP(w, httptest.NewRequest("POST", "/debug/fault", nil))
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("the faulting request answered %d %q", w.Code, w.Body)
	}
	<-entered
	if err := svc.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the replacement's open ended with %v, want Close's cancellation", err)
		}
	default:
		t.Fatal("Close returned while the replacement's open went on")
	}
}

// TestSaxpyNoLength: a /saxpy whose body comes with no Content-Length
// (chunked) answers 411, saying the length is needed, and runs nothing;
// the server then serves a request that states it.
func TestSaxpyNoLength(t *testing.T) {
	srv, _, _ := serve(t, 2)
	x, y := vectors(4, 1)
	req, err := http.NewRequest("POST", srv.URL+"/saxpy?a=2", io.NopCloser(bytes.NewReader(Body(x, y))))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusLengthRequired || !strings.Contains(string(body), "Content-Length") {
		t.Fatalf("a chunked body: %d %q, want 411 naming the Content-Length", resp.StatusCode, body)
	}
	code, got, err := post(context.Background(), srv.Client(), srv.URL+"/saxpy?a=2", Body(x, y))
	if err != nil || code != 200 || !slices.Equal(floats(got), Saxpy(2, x, y)) {
		t.Fatalf("a saxpy after: %d %v", code, err)
	}
}
