// Command load measures the example service under load: at each level of
// concurrent clients it drives the service over HTTP in a closed loop
// (each client sends its next request once the last returned), with
// keep-alive connections of its own (client.go) or with vegeta's attacker
// (-client vegeta), then runs the same saxpy through the service's Go API
// with as many goroutines and no HTTP, so that the HTTP layer's share
// shows. The service runs in a child process, so that its CPU time is its
// own; -cpuprofile writes CPU profiles of both processes.
//
// SIGINT (Ctrl-C) or SIGTERM (as kill, timeout(1) and service managers
// send) stops the measuring: the level in flight ends early, its
// requests in flight cancelled at once however long the service would
// hold them (they count neither as served nor as failed), the service's
// process is sent SIGTERM and waited for (and killed if it has not
// exited within serviceStopGrace), the levels measured so far are
// printed, marked as interrupted, and the load test exits with 128 plus
// the signal's number, 130 for SIGINT and 143 for SIGTERM, as a shell
// reports a command the signal ended. A second signal ends the process
// at once. The service's process also stops once the load test that
// started it is gone, however it ended (-stop-at-eof): it reads the end
// of a pipe that only the load test holds open.
//
// With -rate R vegeta's attacker sends R requests a second over each
// level's clients (an open loop, the way a capacity plan states a rate at
// a latency) rather than as fast as they answer. vegeta times a request
// from when a client took it up, so that a request that waited for a free
// client hides that wait; the report adds each level's p99 and max counted
// from the request's intended send time (start + its sequence number over
// R), which count it.
//
//	go run ./load -device auto -c 1,16,64,256 -duration 2s
//	go run ./load -device auto -c 64 -rate 100000
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rig-go/rig/examples/server/service"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// maxRate is the most requests a second -rate takes: vegeta's pacer
// sends them a whole number of nanoseconds apart, and divides by that
// interval, which is 0 above it.
const maxRate = int(time.Second)

// maxClients bounds a level's clients (-c): each holds a connection of
// its own to the service (and with -client raw a 64 KiB buffer), and the
// connections from one address to the service's share Linux's ephemeral
// ports, 28,232 of them by default.
const maxClients = 10_000

func main() {
	dev := flag.String("device", "auto", "the service's device: auto, host, nv:N or cuda:N")
	levels := flag.String("c", "1,16,64,256", fmt.Sprintf("the levels of concurrent clients, comma-separated, each 1 to %d", maxClients))
	duration := flag.Duration("duration", 2*time.Second, "how long each level runs")
	n := flag.Int("n", 1024, "elements of x and y in a request (1024: 4 KiB each)")
	serve := flag.String("serve", "", "run the service on this address (the child process)")
	stopAtEOF := flag.Bool("stop-at-eof", false, "with -serve: stop serving once standard input ends, as the pipe that the load test passes the service's process it starts ends with the load test")
	verbose := flag.Bool("v", false, "print progress on standard error: the service's process and address once it serves, and each level's start and HTTP figures as the level ends")
	kind := flag.String("client", "vegeta", "the load generator: vegeta (vegeta's attacker, used as a library) or raw (keep-alive HTTP/1.1 connections of its own, one a client, a request in one write, which costs the machine less CPU a request)")
	faults := flag.Int("faults", 0, "after the HTTP levels, lose the device this many times with a faulting kernel of each of -fault-kinds and report how soon the service serves again (not on cuda, whose faults end the process's GPU)")
	faultKinds := flag.String("fault-kinds", "address", "the kinds of fault of -faults, comma-separated: address (a write outside any allocation) and trap")
	serverCPUs := flag.String("server-cpus", "", "the processors the service's process runs on, a list such as 0-7,16 (empty: any); its GOMAXPROCS is their count unless -server-procs says otherwise")
	clientCPUs := flag.String("client-cpus", "", "the processors the load generator runs on over the HTTP levels, as -server-cpus; the Go API's levels run on -server-cpus")
	serverProcs := flag.Int("server-procs", 0, "GOMAXPROCS of the service's process (0: Go's default)")
	serverGOGC := flag.Int("server-gogc", 0, "the service's process's GOGC, its garbage collector's target heap growth in percent, whatever the load generator's (0: the GOGC of the environment, or Go's 100)")
	clientProcs := flag.Int("client-procs", 0, "GOMAXPROCS of the load generator over the HTTP levels (0: Go's default)")
	standby := flag.Bool("standby", true, "keep a standby device open in the service, which requests move to at a loss (service.Config.Standby)")
	rate := flag.Int("rate", 0, "with vegeta: the requests a second to send over each level's clients (0: each client sends its next request once the last answered)")
	cpuprofile := flag.String("cpuprofile", "", "write CPU profiles over the HTTP levels: the server's to `PREFIX`.server.pprof and the client's to PREFIX.client.pprof (with -serve: the server's profile to this file)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unexpected arguments %s: the load test takes flags only (levels are one -c, such as -c 1,16)\n", quoted(flag.Args()))
		os.Exit(2)
	}
	if *kind != "raw" && *kind != "vegeta" {
		fmt.Fprintf(os.Stderr, "-client %q: want raw or vegeta\n", *kind)
		os.Exit(2)
	}
	if *rate < 0 || *rate > maxRate || (*rate > 0 && *kind != "vegeta") {
		fmt.Fprintf(os.Stderr, "-rate %v: want 0, or 1 to %d requests a second with -client vegeta\n", *rate, maxRate)
		os.Exit(2)
	}
	if *faults < 0 {
		fmt.Fprintf(os.Stderr, "-faults %d: want the losses of the device for each of -fault-kinds, 0 or more\n", *faults)
		os.Exit(2)
	}
	for _, p := range []struct {
		name  string
		procs int
	}{{"-server-procs", *serverProcs}, {"-client-procs", *clientProcs}} {
		if p.procs < 0 || p.procs > maxCPUs {
			fmt.Fprintf(os.Stderr, "%s %d: want GOMAXPROCS, 1 to %d, or 0 for Go's default\n", p.name, p.procs, maxCPUs)
			os.Exit(2)
		}
	}
	var kinds []string
	for _, k := range strings.Split(*faultKinds, ",") {
		if k = strings.TrimSpace(k); k != "address" && k != "trap" {
			fmt.Fprintf(os.Stderr, "-fault-kinds %q: want address, trap or both\n", *faultKinds)
			os.Exit(2)
		}
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	if *duration <= 0 {
		// vegeta's attacker reads a duration of 0 or less as no bound.
		fmt.Fprintf(os.Stderr, "-duration %v: want a positive duration, how long each level runs\n", *duration)
		os.Exit(2)
	}
	if *n < 1 || *n > service.MaxElements {
		fmt.Fprintf(os.Stderr, "-n %d: want 1 to %d elements, what one request carries\n", *n, service.MaxElements)
		os.Exit(2)
	}
	if *serverGOGC < 0 {
		fmt.Fprintf(os.Stderr, "-server-gogc %d: want a percent above 0, or 0 for the environment's\n", *serverGOGC)
		os.Exit(2)
	}
	for _, l := range []string{*serverCPUs, *clientCPUs} {
		if _, err := parseCPUs(l); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	var cs []int
	for _, f := range strings.Split(*levels, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 1 || c > maxClients {
			fmt.Fprintf(os.Stderr, "-c %q: want counts of clients such as 1,16,64, each 1 to %d\n", *levels, maxClients)
			os.Exit(2)
		}
		if slices.Contains(cs, c) {
			// The report keys a level's figures by its count.
			fmt.Fprintf(os.Stderr, "-c %q: the level %d is listed twice\n", *levels, c)
			os.Exit(2)
		}
		cs = append(cs, c)
	}
	// The service's process too checks its flags before it serves.
	if *serve != "" {
		if err := pinProcess(*serverCPUs, *serverProcs); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if *serverGOGC > 0 {
			debug.SetGCPercent(*serverGOGC)
		}
		if err := runService(*serve, *dev, *cpuprofile, *standby, *stopAtEOF); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	o := options{dev: *dev, kind: *kind, rate: *rate, levels: cs, duration: *duration, n: *n, faults: *faults,
		profile: *cpuprofile, serverProcs: *serverProcs, clientProcs: *clientProcs, standby: *standby,
		faultKinds: kinds, serverCPUs: *serverCPUs, clientCPUs: *clientCPUs, serverGOGC: *serverGOGC, verbose: *verbose}
	if err := measure(stopContext(), o); err != nil {
		fmt.Fprintln(os.Stderr, err)
		var sig stopSignal
		if errors.As(err, &sig) {
			os.Exit(sig.exitCode())
		}
		os.Exit(1)
	}
}

// stopSignals are the signals that stop the measuring: Ctrl-C's, and
// SIGTERM, which kill, timeout(1) and service managers send.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// stopSignal is the cause of the context of stopContext: the signal
// that stopped the measuring.
type stopSignal struct{ sig syscall.Signal }

func (s stopSignal) Error() string {
	name := "SIGTERM"
	if s.sig == syscall.SIGINT {
		name = "SIGINT"
	}
	return "interrupted by " + name
}

// exitCode returns 128 plus the signal's number, as a shell reports a
// command that the signal ended: 130 for SIGINT, 143 for SIGTERM.
func (s stopSignal) exitCode() int { return 128 + int(s.sig) }

// stopContext returns a context that ends at the first of stopSignals,
// with a stopSignal as its cause; after it, the signals are the system's
// again, so that a second one ends the process at once.
func stopContext() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, stopSignals...)
	go func() {
		s := <-ch
		signal.Reset(stopSignals...)
		sig, _ := s.(syscall.Signal)
		cancel(stopSignal{sig})
	}()
	return ctx
}

// quoted is args, each quoted, separated by spaces.
func quoted(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strconv.Quote(a)
	}
	return strings.Join(q, " ")
}

// runService serves on addr until SIGTERM or SIGINT, or, with
// stopAtEOF, until standard input ends, and prints "ready" once it
// listens. Where profile is not empty, it writes a CPU profile of the
// process from the start to the stop to that file.
func runService(addr, dev, profile string, standby, stopAtEOF bool) error {
	ctx := context.Background()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	eof := make(chan struct{})
	if stopAtEOF {
		// The load test that started this process holds the pipe's
		// other end open until it ends.
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			close(eof)
		}()
	}
	stopProfile := func() error { return nil }
	if profile != "" {
		var err error
		if stopProfile, err = startProfile(profile); err != nil {
			return err
		}
	}
	svc, driver, err := open(ctx, dev, 1024, true, standby)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: svc.Handler()}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("ready %s %s\n", ln.Addr(), driver)
	select {
	case <-sig:
	case <-eof:
	}
	if err := stopProfile(); err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return svc.Close(sctx)
}

// open opens the service on the device dev names.
func open(ctx context.Context, dev string, slots int, debug, standby bool) (*service.Service, string, error) {
	o, driver, err := service.Pick(ctx, dev, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, "", err
	}
	svc, err := service.NewService(ctx, service.Config{Open: o, Driver: driver, Slots: slots, Debug: debug, Standby: standby})
	return svc, driver, err
}

// startProfile starts a CPU profile of this process into the file path;
// the function it returns stops it and closes the file, and returns the
// first error of the profile's writes (which runtime/pprof drops) or of
// the close, naming the file.
func startProfile(path string) (func() error, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := &keptErr{w: f}
	if err := pprof.StartCPUProfile(w); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		err := w.err()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("the CPU profile %s: %w", path, err)
		}
		return nil
	}, nil
}

// keptErr writes to w and keeps the first error, after which it writes
// nothing more. The profiler's goroutine writes; err may be called from
// another once the profile stopped.
type keptErr struct {
	w     io.Writer
	mu    sync.Mutex
	first error
}

func (k *keptErr) Write(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.first != nil {
		return 0, k.first
	}
	n, err := k.w.Write(p)
	if err != nil {
		k.first = err
	}
	return n, err
}

func (k *keptErr) err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.first
}

type result struct {
	rate          float64
	p50, p99, max time.Duration
	n             int           // requests served
	cpu           time.Duration // per request
	client        time.Duration // the load generator's CPU per request, over HTTP
	failed        int
	// Of a paced run, the latencies counted from the intended send time.
	fromSched99, fromSchedMax, late99 time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("%.0f/s | %s | %s | %s | %s", r.rate, us(r.p50), us(r.p99), us(r.max), us(r.cpu))
}

func us(d time.Duration) string { return fmt.Sprintf("%.1f µs", float64(d)/1e3) }

// options are the load test's flags.
type options struct {
	dev, kind                string
	rate                     int // requests a second; 0: closed loop
	levels                   []int
	duration                 time.Duration
	n, faults                int
	profile                  string
	serverProcs, clientProcs int
	standby                  bool
	faultKinds               []string
	serverCPUs, clientCPUs   string
	serverGOGC               int
	verbose                  bool
}

// serviceStopGrace bounds the wait for the service's process to exit
// after SIGTERM, after which it is killed: the service gives its
// requests and its device 10 s to end (runService).
const serviceStopGrace = 15 * time.Second

// stopService sends the service's process SIGTERM and waits for it to
// exit, or kills it once serviceStopGrace has passed; it returns how the
// process ended where it did not exit with 0.
func stopService(child *exec.Cmd) error {
	_ = child.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- child.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("the service process: %v", err)
		}
		return nil
	case <-time.After(serviceStopGrace):
		_ = child.Process.Kill()
		<-done
		return fmt.Errorf("the service process did not exit within %v of SIGTERM, and was killed", serviceStopGrace)
	}
}

// measure runs the load test that o states, and prints its report. Where
// ctx ends first, it stops the measuring, stops the service's process,
// prints the levels measured so far, marked as interrupted, and returns
// ctx's cause.
func measure(ctx context.Context, o options) error {
	dev, kind, levels, duration, n, faults, profile := o.dev, o.kind, o.levels, o.duration, o.n, o.faults, o.profile
	x, y := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = float32(i), 1
	}
	body := service.Body(x, y)
	want := service.Body(service.Saxpy(2, x, y), nil)

	// Over HTTP, the service in a child process.
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{"-serve", "127.0.0.1:0", "-stop-at-eof", "-device", dev, fmt.Sprintf("-standby=%t", o.standby),
		"-server-cpus", o.serverCPUs, "-server-procs", strconv.Itoa(o.serverProcs), "-server-gogc", strconv.Itoa(o.serverGOGC)}
	if profile != "" {
		args = append(args, "-cpuprofile", profile+".server.pprof")
	}
	child := exec.Command(exe, args...)
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		return err
	}
	// The service's process stops once its standard input ends: the
	// pipe's write end stays open in this process only (os.Pipe's ends
	// are not inherited), until measure returns or the process ends.
	alive, held, err := os.Pipe()
	if err != nil {
		return err
	}
	defer func() { _ = held.Close() }()
	child.Stdin = alive
	err = child.Start()
	_ = alive.Close()
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = stopService(child)
		}
	}()
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- line
	}()
	var line string
	select {
	case line = <-ready:
	case <-ctx.Done():
		stopped = true
		if err := stopService(child); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		fmt.Printf("interrupted by %v before the service served: nothing was measured\n", signalName(ctx))
		return context.Cause(ctx)
	}
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "ready" {
		return fmt.Errorf("the service did not start: %q", line)
	}
	addr, driver := f[1], f[2]
	if o.verbose {
		fmt.Fprintf(os.Stderr, "the service's process %d serves at %s (%s)\n", child.Process.Pid, addr, driver)
	}
	stopProfile := func() error { return nil }
	if profile != "" {
		if stopProfile, err = startProfile(profile + ".client.pprof"); err != nil {
			return err
		}
	}
	procs := runtime.GOMAXPROCS(0)
	if err := pinProcess(o.clientCPUs, o.clientProcs); err != nil {
		return err
	}
	clientProcs := runtime.GOMAXPROCS(0)
	httpRes := map[int]result{}
	cut := 0 // the level that the end of ctx cut short, if any
	for _, c := range levels {
		if ctx.Err() != nil {
			break
		}
		if o.verbose {
			fmt.Fprintf(os.Stderr, "%d clients over HTTP: the level starts\n", c)
		}
		h := attack(ctx, kind, o.rate, addr, body, want, c, duration, child.Process.Pid)
		httpRes[c] = h
		if ctx.Err() != nil {
			cut = c
		}
		if o.verbose {
			fmt.Fprintf(os.Stderr, "%d clients over HTTP: %s\n", c, h)
		}
	}
	runtime.GOMAXPROCS(procs)
	if err := stopProfile(); err != nil {
		return err
	}
	rec := map[string][]recovery{}
	var recErr error
	for _, k := range o.faultKinds {
		if faults == 0 || driver == "cuda" || recErr != nil || ctx.Err() != nil {
			break
		}
		rec[k], recErr = recoveries(ctx, addr, request(addr, "/saxpy?a=2", body), want, faults, k)
	}
	stopped = true
	stopErr := stopService(child)
	if ctx.Err() != nil {
		if stopErr != nil {
			fmt.Fprintln(os.Stderr, stopErr)
		}
		fmt.Printf("interrupted by %v: the load test stopped, with the service's process, its requests in flight cancelled and not counted; the Go API was not measured\n\n", signalName(ctx))
		header(o, driver, clientProcs, "")
		for _, c := range levels {
			h, ok := httpRes[c]
			if !ok {
				break
			}
			row(o, c, h, nil, c == cut)
		}
		if len(httpRes) < len(levels) {
			fmt.Println("\nthe levels after these were not measured")
		}
		recReport(o, driver, rec)
		return context.Cause(ctx)
	}
	if stopErr != nil {
		return stopErr
	}
	if recErr != nil {
		return recErr
	}

	// The same work through the Go API, in this process, on the service's
	// processors.
	if err := pinProcess(o.serverCPUs, o.serverProcs); err != nil {
		return err
	}
	if o.serverCPUs == "" && o.serverProcs == 0 {
		runtime.GOMAXPROCS(procs)
	}
	if o.serverGOGC > 0 {
		debug.SetGCPercent(o.serverGOGC)
	}
	svc, _, err := open(context.Background(), dev, 1024, false, false)
	if err != nil {
		return err
	}
	defer func() { _ = svc.Close(context.Background()) }()
	header(o, driver, clientProcs, fmt.Sprintf("Go API %d of %d CPUs", runtime.GOMAXPROCS(0), runtime.NumCPU()))
	for _, c := range levels {
		if ctx.Err() != nil {
			row(o, c, httpRes[c], nil, false)
			continue
		}
		d := direct(ctx, svc, body[:4*n], body[4*n:], c, duration)
		row(o, c, httpRes[c], &d, ctx.Err() != nil)
	}
	if ctx.Err() != nil {
		fmt.Printf("\ninterrupted by %v: the Go API's level marked interrupted was cut short, its saxpys under way cancelled and not counted, and those after it not measured\n", signalName(ctx))
	}
	recReport(o, driver, rec)
	return context.Cause(ctx)
}

// signalName returns "SIGINT" or "SIGTERM", the signal that ended ctx,
// a context of stopContext.
func signalName(ctx context.Context) string {
	var s stopSignal
	if errors.As(context.Cause(ctx), &s) && s.sig == syscall.SIGINT {
		return "SIGINT"
	}
	return "SIGTERM"
}

// header prints the report's title and its table's head; goAPI says on
// which processors the Go API ran, or is empty where it did not.
func header(o options, driver string, clientProcs int, goAPI string) {
	serverProcs := "default"
	if o.serverProcs > 0 {
		serverProcs = strconv.Itoa(o.serverProcs)
	}
	loop := "closed loop"
	if o.rate > 0 {
		loop = fmt.Sprintf("HTTP paced at %d requests/s (the Go API in a closed loop)", o.rate)
	}
	if goAPI != "" {
		goAPI = ", " + goAPI
	}
	fmt.Printf("saxpy of %d floats (%d KiB a vector) on %s (%s), %s, %v a level, %s client; GOMAXPROCS: server %s, client %d%s%s\n\n",
		o.n, 4*o.n/1024, o.dev, driver, loop, o.duration, o.kind, serverProcs, clientProcs, goAPI, cpusNote(o))
	fmt.Println("| clients | HTTP: requests/s | p50 | p99 | max | server CPU/request | client CPU/request | Go API: saxpys/s | p50 | p99 | max | CPU/saxpy | HTTP's share of the server's CPU |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
}

// row prints the table's row of the level of c clients: h over HTTP, and
// d through the Go API, or dashes where d is nil (not measured). A level
// cut short by an interruption is marked so.
func row(o options, c int, h result, d *result, cut bool) {
	level := strconv.Itoa(c)
	if cut {
		level += " (interrupted)"
	}
	goAPI, share, dFailed := "- | - | - | - | -", "n/a", 0
	if d != nil {
		goAPI, dFailed = d.String(), d.failed
		if h.cpu > 0 {
			share = fmt.Sprintf("%.0f%%", 100*(1-float64(d.cpu)/float64(h.cpu)))
		}
	}
	fmt.Printf("| %s | %s | %s | %s | %s |\n", level, h, us(h.client), goAPI, share)
	if o.rate > 0 {
		fmt.Printf("|   | from the intended send: p99 %s, max %s; the send's lateness p99 %s | | | | | | | | | | | |\n", us(h.fromSched99), us(h.fromSchedMax), us(h.late99))
	}
	if h.failed+dFailed > 0 {
		fmt.Printf("|   | %d HTTP requests failed | | | | | | %d saxpys failed | | | | | |\n", h.failed, dFailed)
	}
}

// recReport prints the recoveries from the faults of rec, by kind.
func recReport(o options, driver string, rec map[string][]recovery) {
	if o.faults > 0 && driver == "cuda" {
		fmt.Println("\nno faults on cuda: a CUDA fault ends the GPU for the process")
	}
	for _, k := range o.faultKinds {
		rk := rec[k]
		if len(rk) == 0 {
			continue
		}
		how := "reopening"
		if o.standby {
			how = "moving to its standby device"
		}
		fmt.Printf("\nserving again after a fault (%s), %s, %d faults: from the faulting request to the first right answer", k, how, len(rk))
		var served, after []time.Duration
		for _, r := range rk {
			fmt.Printf(" %s", us(r.served))
			served, after = append(served, r.served), append(after, r.served-r.seen)
		}
		slices.Sort(served)
		slices.Sort(after)
		fmt.Printf("; median %s, max %s; from its answer (503) to the first right answer: median %s, max %s\n",
			us(median(served)), us(served[len(served)-1]), us(median(after)), us(after[len(after)-1]))
	}
}

// median is the median of sorted, which is not empty: the mean of the
// middle two where their count is even.
func median(sorted []time.Duration) time.Duration {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return sorted[n/2-1] + (sorted[n/2]-sorted[n/2-1])/2
}

// attack drives the service at addr with c clients for duration, and
// reads the CPU time of the process pid, and of this process, over it.
// Each client sends its next request once the last answered; a request
// counts as served where it answered 200 with want. With vegeta the
// clients are vegeta's attacker's workers; with a rate above 0, they send
// that many requests a second in all. Where ctx ends first, the clients
// stop early: the requests in flight are cancelled at once (cutter), and
// count neither as served nor as failed.
func attack(ctx context.Context, kind string, rate int, addr string, body, want []byte, c int, duration time.Duration, pid int) result {
	if kind == "vegeta" {
		return attackVegeta(ctx, addr, body, c, rate, duration, pid)
	}
	stop := ctx.Done()
	k, release := newCutter(ctx)
	defer release()
	req := request(addr, "/saxpy?a=2", body)
	lat := &latencies{}
	fails := make([]int, c)
	var wg sync.WaitGroup
	cpu0, self0 := procCPU(pid), selfCPU()
	start := time.Now()
	end := start.Add(duration)
	for g := range c {
		wg.Go(func() {
			cl := newClient(addr, req)
			cl.cut = k
			defer cl.close()
			l := newBatch(lat)
			for !stopped(stop) {
				t := time.Now()
				if t.After(end) {
					break
				}
				code, got, err := cl.do()
				if err != nil && k.cutBy(time.Now()) {
					break // cancelled, not refused
				}
				if err != nil || code != http.StatusOK || !bytes.Equal(got, want) {
					fails[g]++
					continue
				}
				l.add(time.Since(t))
			}
			l.flush()
		})
	}
	wg.Wait()
	wall := time.Since(start)
	cpu, self := procCPU(pid)-cpu0, selfCPU()-self0
	r := summarize(lat, fails, wall)
	r.cpu, r.client = perRequest(cpu, r), perRequest(self, r)
	return r
}

// attackVegeta drives the service at addr with vegeta's attacker: c
// workers, each with a keep-alive connection, at rate requests a second
// in all, or as fast as they answer where rate is 0. Where ctx ends
// first, the attack stops early: the requests in flight are cancelled at
// once (cutter), and count neither as served nor as failed.
func attackVegeta(ctx context.Context, addr string, body []byte, c, rate int, duration time.Duration, pid int) result {
	k, release := newCutter(ctx)
	defer release()
	tr := vegeta.NewStaticTargeter(vegeta.Target{Method: "POST", URL: "http://" + addr + "/saxpy?a=2", Body: body})
	// vegeta.Client replaces the attacker's client whole, its timeout
	// included: without one, a request that the service never answers
	// holds its worker, and the level, for good.
	hc := &http.Client{Timeout: requestTimeout, Transport: &http.Transport{
		MaxIdleConnsPerHost: c,
		MaxConnsPerHost:     c,
		DialContext:         k.dial,
		DisableCompression:  true,
		WriteBufferSize:     64 << 10, // a request in one write
		ReadBufferSize:      64 << 10,
	}}
	a := vegeta.NewAttacker(vegeta.Client(hc), vegeta.Workers(uint64(c)), vegeta.MaxWorkers(uint64(c)), vegeta.MaxBody(0))
	cpu0, self0 := procCPU(pid), selfCPU()
	start := time.Now()
	pace := vegeta.Rate{Freq: 0}
	if rate > 0 {
		pace = vegeta.Rate{Freq: rate, Per: time.Second}
	}
	results := a.Attack(tr, pace, duration, "load")
	ended := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			a.Stop()
		case <-ended:
		}
	}()
	r := vegetaResult(results, start, rate, k)
	close(ended)
	cpu, self := procCPU(pid)-cpu0, selfCPU()-self0
	hc.CloseIdleConnections()
	r.cpu, r.client = perRequest(cpu, r), perRequest(self, r)
	return r
}

// vegetaResult adds up the results of an attack that began at start, at
// rate requests a second (0: as fast as they answer), once its last
// result came. A request counts as served where it answered 200 with no
// error (vegeta reads no body), and only a served request's latency
// counts, as with the raw client: the served are counted one by one, not
// as the requests times vegeta's ratio of successes, which a float
// product can round one below, and the quick answers of failures do not
// lower the percentiles. A request that ended with no answer at or after
// k's cut was cancelled, and counts neither as served nor as failed; k
// may be nil.
func vegetaResult(results <-chan *vegeta.Result, start time.Time, rate int, k *cutter) result {
	lat := &latencies{}
	failed := 0
	sent := newPaced(start, rate)
	for res := range results {
		if res.Error != "" && res.Code == 0 && k != nil && k.cutBy(res.Timestamp.Add(res.Latency)) {
			continue
		}
		if res.Error != "" || res.Code != http.StatusOK {
			failed++
			continue
		}
		lat.add(res.Latency)
		if rate > 0 {
			sent.add(res.Seq, res.Timestamp, res.Latency)
		}
	}
	r := summarize(lat, []int{failed}, time.Since(start))
	if rate > 0 {
		r.fromSched99, r.fromSchedMax, r.late99 = sent.fromIntended()
	}
	return r
}

// summarize returns the rate and the latencies of the requests of lat
// over wall, and the failures of fails, one count per client.
func summarize(lat *latencies, fails []int, wall time.Duration) result {
	var r result
	for _, f := range fails {
		r.failed += f
	}
	r.n = lat.count()
	if r.n == 0 {
		return r
	}
	r.rate = float64(r.n) / wall.Seconds()
	r.p50, r.p99, r.max = lat.nearestRank(50), lat.nearestRank(99), lat.rank(r.n)
	return r
}

// perRequest is cpu over r's requests served.
func perRequest(cpu time.Duration, r result) time.Duration {
	if r.n == 0 {
		return 0
	}
	return cpu / time.Duration(r.n)
}

// direct runs saxpys through the service's Go API on c goroutines for
// duration, or until ctx ends, which cancels the saxpys under way; those
// count neither as done nor as failed.
func direct(ctx context.Context, svc *service.Service, x, y []byte, c int, duration time.Duration) result {
	stop := ctx.Done()
	var wg sync.WaitGroup
	lat := &latencies{}
	fails := make([]int, c)
	cpu0 := selfCPU()
	start := time.Now()
	end := start.Add(duration)
	for g := range c {
		wg.Go(func() {
			l := newBatch(lat)
			fill := func(xb, yb []byte) error { copy(xb, x); copy(yb, y); return nil }
			var sink float32
			read := func(yb []byte) { sink += math.Float32frombits(binary.LittleEndian.Uint32(yb)) }
			for !stopped(stop) {
				t := time.Now()
				if t.After(end) {
					break
				}
				if err := svc.Saxpy(ctx, 2, len(x)/4, fill, read); err != nil {
					if stopped(stop) {
						break // cancelled, not failed
					}
					fails[g]++
					continue
				}
				l.add(time.Since(t))
			}
			l.flush()
			_ = sink
		})
	}
	wg.Wait()
	wall := time.Since(start)
	cpu := selfCPU() - cpu0
	r := summarize(lat, fails, wall)
	r.cpu = perRequest(cpu, r)
	return r
}

// stopped returns whether done is closed, without waiting.
func stopped(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// selfCPU is the user and system time of this process.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is the user and system time of process pid, from /proc, or 0
// where it cannot be read.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // clock ticks of 1/100 s
}
