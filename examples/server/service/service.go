// Package service is the example server's service: a saxpy per HTTP
// request through rig, loss recovery, health, and graceful shutdown.
package service

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	rig "github.com/rig-go/rig/runtime"
)

// MaxElements is the most elements of x and y one request carries.
const MaxElements = 16384

// Service runs each request's saxpy on one rig device. Handlers run on
// net/http's goroutines; each takes a slot (two Pinned buffers and a run
// of the submission), writes the request's vectors into the slot's host
// memory, submits one launch and waits for its point with the request's
// context. Where the device is lost, requests answer 503 with the cause
// and the service moves to its standby device where it keeps one
// (Config.Standby), or opens a replacement in the background before it
// closes the lost device (recover), except on a driver whose faults end
// the GPU for the process (CUDA), where it reports itself unhealthy so that
// an orchestrator restarts it.
type Service struct {
	log     *slog.Logger
	open    func(ctx context.Context, seat int) (*rig.Device, error)
	opened  func(dev *rig.Device)
	driver  string
	slots   int
	debug   bool
	standby bool
	// ioTimeout bounds a request's body read and answer write, the two
	// parts of a request that hold a slot and wait on the client.
	ioTimeout time.Duration
	// slotWait bounds a /saxpy request's wait for a free slot.
	slotWait time.Duration

	cur atomic.Pointer[backend]
	// spare is the standby backend, open on the other seat, or nil. It is
	// stored and swapped under reopenMu; requests never use it.
	spare    atomic.Pointer[backend]
	healthy  atomic.Bool
	reopenMu sync.Mutex
	closed   atomic.Bool
	// draining is set by Drain: /readyz answers 503 while requests are
	// still served.
	draining atomic.Bool
	inFlight sync.WaitGroup
	// life ends at Close (stop): the opens of replacements and standbys
	// after a loss take their contexts from it, so that Close ends an
	// open under way rather than waiting for its bound.
	life context.Context
	stop context.CancelFunc
	// reopenErr is the error of the last failed open of a replacement
	// of the lost serving device, nil once one opens: /healthz gives it
	// with the loss while no device serves.
	reopenErr atomic.Pointer[error]
}

// backend is one open device and what the service made on it.
type backend struct {
	dev   *rig.Device
	seat  int // the seat of Config.Open the device was opened on
	saxpy *rig.Submission
	spin  *rig.Submission
	fault *rig.Submission
	trap  *rig.Submission
	free  chan *slot
	made  atomic.Int32 // slots allocated, at most cap(free)
	// full is set once an allocation of a slot met ErrOutOfMemory: the
	// device's memory holds no more slots than made, and requests wait
	// for one of those rather than allocate.
	full atomic.Bool
}

// slot is the memory of one request in flight.
type slot struct {
	x, y *rig.Buffer
}

// Config configures a Service.
type Config struct {
	// Open opens the device of seat 0 or 1: two devices of different
	// names on the same GPU (nvdev.Timeline(i, 0) and (i, 1), say). The
	// service opens seat 0 first; to recover from the loss of the device
	// of seat k, it opens seat 1-k while the lost device is still open, and
	// closes the lost one after, so that the driver's state of the GPU that
	// its open devices share (nvdev's RM objects of the GPU and its UVM
	// registration) stays up and the replacement does not make it anew.
	// Where the replacement does not open beside the lost device, the
	// service closes the lost one, waits until it gave everything back,
	// and opens seat 1-k then. rig opens one device of a name at a time: an
	// Open that returns devices of one name for both seats gets the
	// second order.
	Open func(ctx context.Context, seat int) (*rig.Device, error)
	// Opened, where set, is given each device Open returns, at once,
	// before the service loads anything on it: the first, each
	// replacement after a loss, each standby. It is for a collector of
	// the devices' metrics to watch them (rigprom's Collector.Watch), so
	// that a device lost between two of its scrapes, which Service.Devices
	// returned to none of them, still counts. It runs on the goroutine
	// that opened the device, and must return.
	Opened func(dev *rig.Device)
	// Driver is the device's driver: "host", "cuda" or "nv".
	Driver string
	// Slots bounds the requests whose work is on the device at once: 0
	// means DefaultSlots, and NewService refuses a negative count or one
	// above MaxSlots. Where the device's memory holds fewer slots, the
	// requests past them wait for a slot as they do past Slots.
	Slots int
	// Debug enables /debug/spin and /debug/fault, whose handlers check no
	// caller: any client that reaches the server can lose the device (a
	// fault ends every request in flight on it with 503) or run a spin of
	// up to 2^32-1 µs (71 minutes) that takes no slot. Enable it only where
	// no client but the operator's reaches the server (the load test's
	// child listens on the loopback address).
	Debug bool
	// Standby keeps a second device open on the other seat, idle, with the
	// service's kernels loaded, so that a loss moves the requests to it at
	// once: the service serves again as soon as the loss is seen, not after
	// an open. The lost device is closed and a new standby opened on its
	// seat in the background. An idle device costs no CPU, only what an
	// open device holds (through nvdev, a channel group and its memory).
	// Not on CUDA, whose faults end the GPU for the process.
	Standby bool
	// Log receives the service's events; nil discards them.
	Log *slog.Logger
	// IOTimeout bounds how long a /saxpy request may take to read its body
	// and to write its answer, each, on the connection (0 or less: 10 s). The
	// request holds a slot while it does both, since the body is read into
	// the slot's memory and the answer written from it: without a bound, a
	// client that sends its body slowly, or stops reading its answers,
	// holds a slot for as long as it keeps its connection, and Slots such
	// clients stop the service. It bounds as well the read of a body sent
	// to a path other than /saxpy, which takes none, after the answer
	// (Handler).
	IOTimeout time.Duration
	// SlotWait bounds how long a /saxpy request waits for a free slot once
	// Slots are in use (0 or less: 1 s); a request that waits longer
	// answers 503 with Retry-After, its body unread. The request's context
	// alone does not bound the wait: net/http watches a connection for its
	// client going away only once the handler has read the request's body,
	// so the context of a request that waits for a slot does not end when
	// its client goes away, and without a bound such requests would queue
	// for as long as the slots stay held and then run, each taking a slot
	// in turn, for clients that are gone.
	SlotWait time.Duration
}

// DefaultSlots is the requests whose work is on the device at once where
// Config.Slots is 0.
const DefaultSlots = 256

// MaxSlots bounds Config.Slots. A backend's queue of free slots is
// allocated whole as its device opens (8 bytes a slot), and its slots as
// requests need them (two Pinned buffers of 64 KiB each, 128 GiB at the
// bound, past what a device's budget holds).
const MaxSlots = 1 << 20

// NewService opens the device and prepares its slots. It returns an error,
// opening nothing, where c.Slots is negative or above MaxSlots.
func NewService(ctx context.Context, c Config) (*Service, error) {
	if c.Slots < 0 || c.Slots > MaxSlots {
		return nil, fmt.Errorf("service: Config.Slots is %d: want the requests whose work is on the device at once, 1 to %d, or 0 for DefaultSlots (%d)", c.Slots, MaxSlots, DefaultSlots)
	}
	if c.Slots == 0 {
		c.Slots = DefaultSlots
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.IOTimeout <= 0 {
		c.IOTimeout = 10 * time.Second
	}
	if c.SlotWait <= 0 {
		c.SlotWait = time.Second
	}
	s := &Service{log: c.Log, open: c.Open, opened: c.Opened, driver: c.Driver, slots: c.Slots, debug: c.Debug,
		standby: c.Standby && c.Driver != "cuda", ioTimeout: c.IOTimeout, slotWait: c.SlotWait}
	s.life, s.stop = context.WithCancel(context.Background())
	b, err := s.start(ctx, 0)
	if err != nil {
		s.stop()
		return nil, err
	}
	s.healthy.Store(true)
	s.cur.Store(b)
	s.watch(b)
	if s.standby {
		s.reopenMu.Lock()
		s.openSpare(ctx, 1)
		s.unlockReopen()
	}
	return s, nil
}

// watch recovers b, the backend requests use or the standby, as soon as
// its device is lost, whether or not a request meets the loss.
func (s *Service) watch(b *backend) {
	s.inFlight.Add(1)
	go func() {
		defer s.inFlight.Done()
		select {
		case <-b.dev.Lost():
			s.recover(b)
		case <-b.dev.Done():
		}
	}()
}

// Devices returns the device the service runs on now and its standby, if
// any, for metrics.
func (s *Service) Devices() []*rig.Device {
	var devs []*rig.Device
	if b := s.cur.Load(); b != nil {
		devs = append(devs, b.dev)
	}
	if sp := s.spare.Load(); sp != nil {
		devs = append(devs, sp.dev)
	}
	return devs
}

// start opens the device of seat and makes a backend on it.
func (s *Service) start(ctx context.Context, seat int) (*backend, error) {
	dev, err := s.open(ctx, seat)
	if err != nil {
		return nil, err
	}
	if s.opened != nil {
		s.opened(dev)
	}
	b, err := s.prepare(dev, seat)
	if err != nil {
		_ = dev.Close()
		<-dev.Done()
		return nil, err
	}
	s.log.Info("device open", "device", dev.Name(), "arch", dev.Arch(), "slots", s.slots)
	return b, nil
}

func (s *Service) prepare(dev *rig.Device, seat int) (*backend, error) {
	bin, err := Image(s.driver, dev.Arch())
	if err != nil {
		return nil, err
	}
	img, err := dev.LoadImage(bin)
	if err != nil {
		return nil, err
	}
	b := &backend{dev: dev, seat: seat, free: make(chan *slot, s.slots)}
	subs := []struct {
		to   **rig.Submission
		name string
		refs []rig.Ref
	}{
		{&b.saxpy, "saxpy", []rig.Ref{rig.ReadArg(0, 2), rig.ReadWriteArg(1, 3)}},
		{&b.spin, "spin", nil},
		{&b.fault, "crash", []rig.Ref{rig.WriteArg(0, 0)}},
		{&b.trap, "trap", nil},
	}
	for _, sb := range subs {
		fn, err := img.Resolve(sb.name)
		if err != nil {
			return nil, err
		}
		if *sb.to, err = rig.NewSubmission(dev, rig.Kernel(fn, sb.refs...)); err != nil {
			return nil, err
		}
	}
	// One slot now; the others as requests need them, so that an open,
	// and a reopen after a loss, serve at once.
	sl, err := b.newSlot()
	if err != nil {
		return nil, err
	}
	b.made.Store(1)
	b.free <- sl
	return b, nil
}

// newSlot allocates a slot's buffers on the backend's device.
func (b *backend) newSlot() (*slot, error) {
	x, err := b.dev.Alloc(rig.PinnedMemory, 4*MaxElements)
	if err != nil {
		return nil, err
	}
	y, err := b.dev.Alloc(rig.PinnedMemory, 4*MaxElements)
	if err != nil {
		_ = x.Free()
		return nil, err
	}
	return &slot{x: x, y: y}, nil
}

// Handler returns the service's HTTP handler:
//
//	POST /saxpy?a=A   A a finite float32; body: x then y, n little-endian
//	                  float32 each; answer: a*x + y, n float32
//	GET  /healthz     200 while a device serves; 503 while none does (the
//	                  serving device is lost and no replacement opened
//	                  yet, as while its reopens fail), with the loss and
//	                  the last reopen's error; 500 once the process
//	                  cannot serve (a CUDA fault)
//	GET  /readyz      200 while a device serves, 503 otherwise
//	POST /debug/spin?us=U                with Config.Debug only
//	POST /debug/fault?kind=address|trap  with Config.Debug only: a kernel
//	                  that writes outside any allocation (address, the
//	                  default) or traps, which loses the device
//
// The /debug handlers check no caller (Config.Debug).
//
// Only /saxpy takes a body. A request to any other path (the 404 and 405
// answers included) that carries one, announced by a Content-Length above
// 0 or chunked, is answered as it would be without it, with the body
// unread and "Connection: close": the answer is written at once and the
// connection closed after it, once what the client sends of the body is
// read (up to 256 KiB) or Config.IOTimeout has passed since the answer
// (Bodiless).
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /saxpy", s.handleSaxpy)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if !s.healthy.Load() {
			http.Error(w, "unhealthy: "+s.lossText(), http.StatusInternalServerError)
			return
		}
		if why := s.unserved(); why != "" {
			http.Error(w, "unhealthy: "+why, http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		b := s.cur.Load()
		if s.closed.Load() || s.draining.Load() || b == nil || b.dev.Err() != nil {
			http.Error(w, "not ready: "+s.lossText(), http.StatusServiceUnavailable)
			return
		}
		if sp := s.spare.Load(); sp != nil && sp.dev.Err() == nil {
			_, _ = fmt.Fprintf(w, "ready: %s (standby %s)\n", b.dev.Name(), sp.dev.Name())
			return
		}
		_, _ = fmt.Fprintf(w, "ready: %s\n", b.dev.Name())
	})
	if s.debug {
		mux.HandleFunc("POST /debug/spin", s.handleSpin)
		mux.HandleFunc("POST /debug/fault", s.handleFault)
	}
	return s.Guard(mux)
}

// Guard returns h, which serves the service's paths among others, such
// that every request but a POST to /saxpy goes through Bodiless: the
// answers of h's own mux included, such as its redirects of paths it
// cleans (//saxpy). Handler is its mux guarded so; a server guards so the
// mux it puts in front of Handler.
func (s *Service) Guard(h http.Handler) http.Handler {
	others := s.Bodiless(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/saxpy" {
			h.ServeHTTP(w, r)
			return
		}
		others.ServeHTTP(w, r)
	})
}

// Bodiless returns h, a handler of requests that take no body, such that
// a body a request carries, announced by a Content-Length above 0 or
// chunked, is not waited for beyond Config.IOTimeout: the request is
// answered as it would be without it, with the body unread and
// "Connection: close". Handler serves the service's paths other than
// /saxpy through it, and a server serves through it as well its own
// handlers that take no body beside the service's (its metrics, say), and
// its mux's own answers (the redirects of paths it cleans), with
// net/http's answer to "OPTIONS *" turned off
// (http.Server.DisableGeneralOptionsHandler), which reads the body first.
//
// net/http reads what a handler left of a body before it writes the answer
// (up to 256 KiB, to keep the connection), with no deadline of its own, so
// that a client that announces a body and sends none would get no answer
// and hold the connection, and its goroutine, for as long as it keeps it
// open. "Connection: close" skips that read: the answer is written at once
// and the connection is not kept. net/http still reads what comes of the
// body once the handler returns, before it closes the connection, so that
// the close does not reset an answer the client has yet to read; a read
// deadline of Config.IOTimeout, set once the handler returns, bounds that
// read.
func (s *Service) Bodiless(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 0 {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close")
		h.ServeHTTP(w, r)
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.ioTimeout))
	})
}

// unserved says why no device serves, "" while one does: the serving
// device is lost and no replacement is open yet, with the error of the
// last open of one that failed.
func (s *Service) unserved() string {
	b := s.cur.Load()
	if b == nil {
		return "no device"
	}
	err := b.dev.Err()
	if err == nil {
		return ""
	}
	why := "no device serves: " + err.Error()
	if e := s.reopenErr.Load(); e != nil {
		why += "; reopening: " + (*e).Error()
	}
	return why
}

func (s *Service) lossText() string {
	if b := s.cur.Load(); b != nil {
		if err := b.dev.Err(); err != nil {
			return err.Error()
		}
	}
	if s.closed.Load() || s.draining.Load() {
		return "shutting down"
	}
	return "no device"
}

// Drain marks the service as shutting down while it still serves: /readyz
// answers 503, so that a load balancer that probes it sends no more
// requests, and /saxpy serves those that still come. A server drains for
// as long as the balancer takes to notice, then shuts its HTTP server
// down (http.Server.Shutdown), which ends the requests in flight, and
// calls Close. Any goroutine may call it; a second call does nothing.
func (s *Service) Drain() { s.draining.Store(true) }

func (s *Service) handleSaxpy(w http.ResponseWriter, r *http.Request) {
	h := saxpyHandling{w: w, body: r.Body, timeout: s.ioTimeout}
	a, err := queryFloat32(r.URL.RawQuery, "a")
	if err != nil {
		h.boundUnread()
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.ContentLength < 0 {
		// A body of no stated length (chunked): the slot is sized by the
		// length before any of it is read.
		h.boundUnread()
		http.Error(w, fmt.Sprintf("the body must come with a Content-Length: x and y, 1 to %d float32 each", MaxElements), http.StatusLengthRequired)
		return
	}
	if r.ContentLength < 8 || r.ContentLength%8 != 0 || r.ContentLength > 8*MaxElements {
		h.boundUnread()
		http.Error(w, fmt.Sprintf("the body must hold x and y, 1 to %d float32 each (a Content-Length that is a multiple of 8)", MaxElements), http.StatusBadRequest)
		return
	}
	n := int(r.ContentLength / 8)
	err = s.saxpy(r.Context(), s.slotWait, a, n, h.fill, h.answer)
	if err == nil {
		return
	}
	h.boundUnread()
	if br, ok := err.(badRequest); ok {
		code := http.StatusBadRequest
		if errors.Is(br.error, os.ErrDeadlineExceeded) {
			// The client sent less of the body than it announced
			// within IOTimeout.
			code = http.StatusRequestTimeout
		}
		http.Error(w, br.Error(), code)
		return
	}
	s.fail(w, err)
}

// saxpyHandling is one request's reading of x and y and writing of the
// answer, on the handler's goroutine.
type saxpyHandling struct {
	w       http.ResponseWriter
	body    io.Reader
	timeout time.Duration // for the body's read, and for the answer's write
	// bounded is set once no read of the body is left without a deadline:
	// fill read it to its end, or left its deadline on a read that failed.
	bounded bool
}

// fill reads x and y from the body straight into the device's memory,
// within the timeout: the request holds its slot meanwhile.
func (h *saxpyHandling) fill(x, y []byte) error {
	// A ResponseWriter without deadlines (a test's recorder) reads as it
	// can. The deadline is lifted once the body is read: net/http reads
	// on in the background to see the client go away, and a deadline
	// passed there would cancel the request's context while its work
	// runs. Where the read fails, the deadline stays: what is left of
	// the body is read within it as well (boundUnread).
	rc := http.NewResponseController(h.w)
	_ = rc.SetReadDeadline(time.Now().Add(h.timeout))
	h.bounded = true
	if _, err := io.ReadFull(h.body, x); err != nil {
		return badRequest{fmt.Errorf("reading x: %w", err)}
	}
	if _, err := io.ReadFull(h.body, y); err != nil {
		return badRequest{fmt.Errorf("reading y: %w", err)}
	}
	_ = rc.SetReadDeadline(time.Time{})
	return nil
}

// boundUnread bounds by the timeout the read of what is left of the body,
// before an answer other than the saxpy's, which may leave the body unread
// or read in part. net/http reads what a handler left of a body before it
// writes the answer (up to 256 KiB, to keep the connection), with no
// deadline of its own: without one, a client that sends no more of its
// body gets no answer, and holds the connection and its goroutine for as
// long as it keeps the connection. Within the bound, a client that sends
// its body gets the answer on a connection kept alive; past it, the answer
// is written and the connection closed. It does nothing where fill bounded
// the read.
func (h *saxpyHandling) boundUnread() {
	if !h.bounded {
		h.bounded = true
		_ = http.NewResponseController(h.w).SetReadDeadline(time.Now().Add(h.timeout))
	}
}

// answer writes y, with header values that are not allocated per request,
// within the timeout, so that the slot, which y is the memory of, is not
// held by a client that does not read. net/http clears the write deadline
// once the answer is sent, before the connection's next request.
func (h *saxpyHandling) answer(y []byte) {
	hd := h.w.Header()
	hd["Content-Type"] = octetStream
	hd["Content-Length"] = contentLength(len(y))
	_ = http.NewResponseController(h.w).SetWriteDeadline(time.Now().Add(h.timeout))
	_, _ = h.w.Write(y)
}

// octetStream is the answer's Content-Type; net/http only reads it.
var octetStream = []string{"application/octet-stream"}

// lastLength is the Content-Length value of the last answer, which the
// next answer of as many bytes reuses; net/http only reads it.
var lastLength atomic.Pointer[lengthValue]

type lengthValue struct {
	n int
	v []string
}

// contentLength returns the header value of a Content-Length of n bytes.
func contentLength(n int) []string {
	if l := lastLength.Load(); l != nil && l.n == n {
		return l.v
	}
	l := &lengthValue{n: n, v: []string{strconv.Itoa(n)}}
	lastLength.Store(l)
	return l.v
}

// queryFloat32 parses the float32 of the first parameter key of the raw
// query q, without allocating where the value needs no unescaping. It
// returns an error that says what is wrong, for an answer of 400, where q
// has no parameter key or its value is no number, lies outside float32's
// range, or is NaN or infinite.
func queryFloat32(q, key string) (float32, error) {
	for q != "" {
		var kv string
		kv, q, _ = strings.Cut(q, "&")
		k, v, _ := strings.Cut(kv, "=")
		if strings.ContainsAny(k, "%+") {
			if u, err := url.QueryUnescape(k); err == nil {
				k = u
			}
		}
		if k != key {
			continue
		}
		if strings.ContainsAny(v, "%+") {
			u, err := url.QueryUnescape(v)
			if err != nil {
				return 0, fmt.Errorf("%s=%.40q: not a number", key, v)
			}
			v = u
		}
		f, err := strconv.ParseFloat(v, 32)
		switch {
		case errors.Is(err, strconv.ErrRange):
			return 0, fmt.Errorf("%s=%.40q: out of float32's range", key, v)
		case err != nil:
			return 0, fmt.Errorf("%s=%.40q: not a number", key, v)
		case math.IsNaN(f) || math.IsInf(f, 0):
			return 0, fmt.Errorf("%s=%.40q: not a finite number", key, v)
		}
		return float32(f), nil
	}
	return 0, fmt.Errorf("no parameter %s: want a finite float32", key)
}

type badRequest struct{ error }

// Saxpy computes y = a*x + y on the device for vectors of n elements (1 to
// MaxElements): fill writes x's and y's bytes (n little-endian float32
// each) into the device's memory, and read is given the result's bytes,
// valid until it returns. The wait for the device ends with ctx. An error
// of fill is returned as it is; a panic of fill or read goes on to the
// caller, with the slot the call took given back.
func (s *Service) Saxpy(ctx context.Context, a float32, n int, fill func(x, y []byte) error, read func(y []byte)) error {
	return s.saxpy(ctx, 0, a, n, fill, read)
}

// saxpy is Saxpy with the wait for a free slot bounded by wait as well,
// where it is above 0 (errBusy).
func (s *Service) saxpy(ctx context.Context, wait time.Duration, a float32, n int, fill func(x, y []byte) error, read func(y []byte)) error {
	if n < 1 || n > MaxElements {
		return fmt.Errorf("saxpy of %d elements: want 1 to %d", n, MaxElements)
	}
	b, sl, err := s.take(ctx, wait)
	if err != nil {
		return err
	}
	// The slot goes back as the call returns, where fill or read panics
	// as well (the panic goes on to the caller, which may recover it),
	// unless give took it.
	given := false
	defer func() {
		if !given {
			b.free <- sl
		}
	}()
	xb, yb := sl.x.Bytes()[:4*n], sl.y.Bytes()[:4*n]
	if err := fill(xb, yb); err != nil {
		return err
	}
	run := b.saxpy.Take()
	run.Groups(0, (n+255)/256, 1, 1)
	run.Threads(0, 256, 1, 1)
	run.SetInt32(0, 0, int32(n))
	run.SetFloat32(0, 1, a)
	// Where the wait ends first (the client went away, the device was
	// lost), the slot goes back once the work no longer runs: give.
	if p, err := run.Do(ctx, sl.x, sl.y); err != nil {
		given = true
		s.give(b, sl, p)
		return err
	}
	read(yb)
	return nil
}

func (s *Service) handleSpin(w http.ResponseWriter, r *http.Request) {
	us, err := strconv.ParseUint(r.URL.Query().Get("us"), 10, 32)
	if err != nil {
		http.Error(w, "us: not a count of microseconds", http.StatusBadRequest)
		return
	}
	b := s.cur.Load()
	run := b.spin.Take()
	run.SetUint64(0, 0, us*1000)
	if _, err := run.Do(r.Context()); err != nil {
		s.fail(w, err)
		return
	}
	_, _ = io.WriteString(w, "done\n")
}

func (s *Service) handleFault(w http.ResponseWriter, r *http.Request) {
	kind := r.URL.Query().Get("kind")
	if kind != "" && kind != "address" && kind != "trap" {
		http.Error(w, fmt.Sprintf("kind %q: want address or trap", kind), http.StatusBadRequest)
		return
	}
	b, sl, err := s.take(r.Context(), 0)
	if err != nil {
		s.fail(w, err)
		return
	}
	var p rig.Point
	if kind == "trap" {
		p, err = b.trap.Take().Submit(r.Context())
	} else {
		p, err = b.fault.Take().Submit(r.Context(), sl.x)
	}
	if err == nil {
		err = p.Wait(r.Context())
	}
	s.give(b, sl, p)
	if err != nil {
		s.fail(w, err)
		return
	}
	_, _ = io.WriteString(w, "the faulting kernel did not fault\n")
}

// take returns the current backend and one of its free slots, waiting
// while ctx allows, and for at most wait where it is above 0: past it,
// take returns errBusy.
func (s *Service) take(ctx context.Context, wait time.Duration) (*backend, *slot, error) {
	b := s.cur.Load()
	if s.closed.Load() {
		return nil, nil, errShutdown
	}
	if err := b.dev.Err(); err != nil {
		s.recover(b)
		return nil, nil, err
	}
	select {
	case sl := <-b.free:
		return b, sl, nil
	default:
	}
	// No free slot: make one while fewer than the bound exist and the
	// device's memory holds them. Where it holds no more, the request
	// waits for a slot in use, as it does at the bound (at least one
	// slot is made as the device opens).
	if !b.full.Load() {
		if n := b.made.Add(1); int(n) <= cap(b.free) {
			sl, err := b.newSlot()
			if err == nil {
				return b, sl, nil
			}
			b.made.Add(-1)
			if !errors.Is(err, rig.ErrOutOfMemory) {
				return nil, nil, err
			}
			if b.full.CompareAndSwap(false, true) {
				s.log.Warn("the device's memory holds fewer slots than the bound: requests wait for the slots made", "device", b.dev.Name(), "slots", b.made.Load(), "bound", cap(b.free), "err", err)
			}
		} else {
			b.made.Add(-1)
		}
	}
	var expired <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		expired = t.C
	}
	select {
	case sl := <-b.free:
		return b, sl, nil
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	case <-expired:
		return nil, nil, errBusy
	}
}

// give hands a slot back once the work that uses it is done: at once
// where p is reached (the zero Point of a submission that failed is) or
// the device is lost, and otherwise from a goroutine that waits for it, so
// that a request that went away never lets another request write the
// memory the device still reads.
func (s *Service) give(b *backend, sl *slot, p rig.Point) {
	if p.Reached() || b.dev.Err() != nil {
		b.free <- sl
		return
	}
	go func() {
		_ = p.Wait(context.Background())
		b.free <- sl
	}()
}

var errShutdown = errors.New("the service is shutting down")

// errBusy is take's error where no slot came free within its wait.
var errBusy = errors.New("no slot came free")

// fail answers a request whose work failed: 503 with the cause for a lost
// or closed device, a shutdown, or a client that went away or whose
// deadline passed (which reads no answer, but the connection may still
// carry one), 503 with Retry-After where every slot stayed in use.
func (s *Service) fail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// The client went away, or its deadline passed: no one reads an
		// answer.
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	case errors.Is(err, rig.ErrLost):
		// recover logs the loss once; each request that met it, here.
		s.log.Debug("request met a lost device", "err", err)
		if b := s.cur.Load(); b != nil {
			s.recover(b)
		}
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	case errors.Is(err, rig.ErrClosed), errors.Is(err, errShutdown):
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	case errors.Is(err, errBusy):
		w.Header().Set("Retry-After", "1")
		slots := s.slots
		if b := s.cur.Load(); b != nil {
			// The device's memory may hold fewer than the bound.
			slots = int(b.made.Load())
		}
		http.Error(w, fmt.Sprintf("busy: all %d slots stayed in use for %v; retry later", slots, s.slotWait), http.StatusServiceUnavailable)
	default:
		s.log.Error("request failed", "err", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// recover replaces the lost backend b. It opens the device of the other
// seat first, while b's device, lost but not closed, still holds what the
// driver shares among the open devices of its GPU, makes it the backend
// requests use, and then closes b's device and waits until it gave
// everything back. Where the replacement does not open so, it closes b's
// device first and opens the other seat after, retrying while the service
// runs. On CUDA, whose faults end the GPU for the process, it only marks
// the service unhealthy.
func (s *Service) recover(b *backend) {
	if s.driver == "cuda" {
		if s.healthy.CompareAndSwap(true, false) {
			s.log.Error("device lost: a CUDA fault ends the GPU for the process; restart the process", "err", b.dev.Err())
		}
		return
	}
	if !s.reopenMu.TryLock() {
		// The holder looks again as it unlocks (unlockReopen).
		return
	}
	if b.dev.Err() == nil || s.closed.Load() {
		// Every exit that held the lock looks again (unlockReopen): a
		// loss whose recover found the lock held was left to it.
		s.unlockReopen()
		return
	}
	if s.spare.CompareAndSwap(b, nil) {
		// The standby itself was lost: replace it.
		s.inFlight.Add(1)
		go func() {
			defer s.inFlight.Done()
			s.log.Error("standby device lost", "device", b.dev.Name(), "err", b.dev.Err())
			closeLost(b)
			s.openSpare(s.life, b.seat)
			s.unlockReopen()
		}()
		return
	}
	// A request that met the loss may ask after the replacement serves:
	// only the lost backend that requests still use is replaced.
	if s.cur.Load() != b {
		s.unlockReopen()
		return
	}
	s.log.Error("device lost", "device", b.dev.Name(), "err", b.dev.Err())
	sp := s.spare.Swap(nil)
	if sp != nil {
		if sp.dev.Err() == nil {
			// The standby serves from now on; the lost device is closed
			// and a new standby opened on its seat.
			s.cur.Store(sp)
			s.log.Info("moved to the standby device after a loss", "device", sp.dev.Name(), "lost", b.dev.Name())
			s.inFlight.Add(1)
			go func() {
				defer s.inFlight.Done()
				closeLost(b)
				s.openSpare(s.life, b.seat)
				s.unlockReopen()
			}()
			return
		}
	}
	s.inFlight.Add(1)
	go func() {
		defer s.inFlight.Done()
		if sp != nil {
			// Lost as well (a fault of the whole GPU): its seat is the
			// one the replacement opens on. Closed here, not on the
			// request's goroutine that found the loss.
			closeLost(sp)
		}
		start := time.Now()
		seat := 1 - b.seat
		lostClosed := false
		nb, err := s.startWithin(seat)
		if err != nil {
			s.log.Error("opening a replacement beside the lost device", "err", err)
			s.failedReopen(err)
			closeLost(b)
			lostClosed = true
			for wait := time.Millisecond; !s.closed.Load(); wait = min(2*wait, time.Second) {
				if nb, err = s.startWithin(seat); err == nil {
					break
				}
				s.log.Error("reopening the device", "err", err)
				s.failedReopen(err)
				select {
				case <-time.After(wait):
				case <-s.life.Done():
				}
			}
		}
		if nb != nil {
			s.cur.Store(nb)
			s.reopenErr.Store(nil)
			s.log.Info("device reopened after a loss", "device", nb.dev.Name(), "took", time.Since(start))
			if s.closed.Load() {
				_ = nb.dev.Close()
			}
			s.watch(nb)
		}
		if !lostClosed {
			closeLost(b)
		}
		if s.standby && nb != nil {
			s.openSpare(s.life, b.seat)
		}
		s.unlockReopen()
	}()
}

// openSpare opens the standby on seat, under reopenMu or before the
// service serves. A standby that does not open is logged, and the next
// loss is recovered by an open.
func (s *Service) openSpare(ctx context.Context, seat int) {
	if s.closed.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	sb, err := s.start(ctx, seat)
	if err != nil {
		s.log.Error("opening the standby device", "err", err)
		return
	}
	s.spare.Store(sb)
	s.log.Info("standby device open", "device", sb.dev.Name(), "took", time.Since(start))
	s.watch(sb)
}

// unlockReopen unlocks reopenMu, then recovers a backend lost while it was
// held, whose recover found it held.
func (s *Service) unlockReopen() {
	s.reopenMu.Unlock()
	if s.closed.Load() {
		return
	}
	if b := s.cur.Load(); b != nil && b.dev.Err() != nil {
		s.recover(b)
	}
	if b := s.spare.Load(); b != nil && b.dev.Err() != nil {
		s.recover(b)
	}
}

// failedReopen records err, the error of an open of a replacement of the
// lost serving device, for /healthz.
func (s *Service) failedReopen(err error) { s.reopenErr.Store(&err) }

// startWithin is start with 10 s to open the device, or until Close.
func (s *Service) startWithin(seat int) (*backend, error) {
	ctx, cancel := context.WithTimeout(s.life, 10*time.Second)
	defer cancel()
	return s.start(ctx, seat)
}

// closeLost closes the lost backend's device and waits until it gave
// everything back.
func closeLost(b *backend) {
	_ = b.dev.Close()
	<-b.dev.Done()
}

// Close closes the device once the HTTP server has finished its requests
// (http.Server.Shutdown), and returns once the device gave everything back
// or ctx ends. An open of a replacement or a standby under way, after a
// loss, is ended through its context; a recovery that is closing a lost
// device is waited for while ctx lasts, and where ctx ends first the
// devices are closed once it ended, after Close returned ctx's error.
func (s *Service) Close(ctx context.Context) error {
	s.closed.Store(true)
	s.stop()
	closed := make(chan error, 1)
	var b, sp *backend
	go func() {
		s.reopenMu.Lock()
		b = s.cur.Load()
		sp = s.spare.Swap(nil)
		s.reopenMu.Unlock()
		err := b.dev.Close()
		if errors.Is(err, rig.ErrLost) {
			err = nil
		}
		if sp != nil {
			if serr := sp.dev.Close(); err == nil && !errors.Is(serr, rig.ErrLost) {
				err = serr
			}
		}
		closed <- err
	}()
	var err error
	select {
	case err = <-closed:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-b.dev.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	if sp != nil {
		select {
		case <-sp.dev.Done():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	ended := make(chan struct{})
	go func() {
		s.inFlight.Wait()
		close(ended)
	}()
	select {
	case <-ended:
	case <-ctx.Done():
		return ctx.Err()
	}
	return err
}

// Saxpy computes a*x + y on the host: what the service returns.
func Saxpy(a float32, x, y []float32) []float32 {
	out := make([]float32, len(x))
	for i := range x {
		out[i] = a*x[i] + y[i]
	}
	return out
}

// Body is the request body of x and y.
func Body(x, y []float32) []byte {
	b := make([]byte, 0, 4*(len(x)+len(y)))
	for _, v := range x {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	for _, v := range y {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}
