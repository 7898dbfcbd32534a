// Command server is an example service that runs GPU work through rig for
// each HTTP request: a saxpy (y = a*x + y) of the request's vectors. It
// opens the first GPU where one is (through the RM with nvdev, then through
// CUDA with cudadev) and the host driver otherwise.
//
//	go run . -addr :8080
//	curl -s --data-binary @body 'localhost:8080/saxpy?a=2' > y
//
// See README.md for the API, loss recovery and the load test.
package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rig-go/rig/examples/server/service"
	"github.com/rig-go/rig/rigprom"
	rig "github.com/rig-go/rig/runtime"
)

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(o, log); err != nil {
		log.Error("server", "err", err)
		os.Exit(1)
	}
}

// run serves the service of the command line o until SIGINT or SIGTERM.
func run(o options, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	open, driver, err := service.Pick(ctx, o.device, log)
	if err != nil {
		return err
	}
	svc, metrics, err := newService(ctx, service.Config{Open: open, Driver: driver, Slots: o.slots, Debug: o.debug, Standby: o.standby, Log: log})
	if err != nil {
		return err
	}
	// rig's own events (opens, losses, closes, reclamation) go to the
	// service's log, and its devices' counters to /metrics, which takes no
	// body and treats one as the service's paths other than /saxpy do
	// (Service.Bodiless).
	rig.SetLogger(log)
	prometheus.MustRegister(metrics)
	srv := newServer(o.addr, handler(svc))
	served := make(chan error, 1)
	go func() { served <- srv.ListenAndServe() }()
	log.Info("serving", "addr", o.addr, "driver", driver)
	select {
	case err := <-served:
		_ = svc.Close(context.Background())
		return err
	case <-ctx.Done():
	}
	// Graceful shutdown: answer 503 at /readyz for -drain while still
	// serving, so that a load balancer stops sending; then stop accepting,
	// let the requests in flight end, close the device and wait until it
	// gave everything back. A second signal ends the drain; a signal after
	// the drain ends the wait for the requests and the device.
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	svc.Drain()
	log.Info("shutting down", "drain", o.drain)
	if o.drain > 0 {
		dctx, cancel := untilSignal(sig, o.drain)
		<-dctx.Done()
		cancel()
	}
	err = stopServing(srv, svc, sig, shutdownBound)
	if errors.Is(<-served, http.ErrServerClosed) {
		log.Info("stopped")
	}
	return err
}

// shutdownBound bounds the wait for the requests in flight and for the
// device's close at shutdown.
const shutdownBound = 30 * time.Second

// untilSignal returns a context that ends after bound or at the next value
// received from sig, whichever comes first. Its cancel function ends it
// and the goroutine that watches sig.
func untilSignal(sig <-chan os.Signal, bound time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	go func() {
		select {
		case <-sig:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// closer is what stopServing closes after the server: the service.
type closer interface {
	Close(ctx context.Context) error
}

// stopServing shuts srv down, waiting for its requests in flight, then
// closes svc, waiting until it gave its devices back; both waits end after
// bound or at the next signal received from sig. It returns the first
// error of the two, the context's where a wait was cut short.
func stopServing(srv *http.Server, svc closer, sig <-chan os.Signal, bound time.Duration) error {
	ctx, cancel := untilSignal(sig, bound)
	defer cancel()
	err := srv.Shutdown(ctx)
	if cerr := svc.Close(ctx); err == nil {
		err = cerr
	}
	return err
}

// newService opens the service of c and a collector of its devices'
// metrics, which is given each device the service opens
// (Config.Opened), so that a device lost between two scrapes (a
// replacement lost in turn before a scrape saw it) counts in
// rig_device_losses_total.
func newService(ctx context.Context, c service.Config) (*service.Service, *rigprom.Collector, error) {
	var svc *service.Service
	// The collector is made before the service, whose first open it
	// watches; a scrape reads the service only once it is registered,
	// after the service is made.
	metrics := rigprom.NewCollector(func() []*rig.Device { return svc.Devices() })
	c.Opened = metrics.Watch
	svc, err := service.NewService(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	return svc, metrics, nil
}

// handler serves the service's paths and /metrics, every request but
// /saxpy's through Bodiless (Service.Guard), the mux's own answers
// included (its redirects of paths such as //saxpy), so that a body
// announced and never sent is not waited for.
func handler(svc *service.Service) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", svc.Handler())
	mux.Handle("GET /metrics", promhttp.Handler())
	return svc.Guard(mux)
}

// newServer returns the HTTP server of the service's handler h on addr.
// Each phase of a connection in which the server waits on its client is
// bounded: a request's head by ReadHeaderTimeout, a /saxpy request's body
// and answer by the service (Config.IOTimeout), and the wait for a
// keep-alive connection's next request by IdleTimeout. Without
// IdleTimeout (and with no ReadTimeout, which it defaults to) a connection
// that made one request and then stays silent is kept, with its goroutine
// and file descriptor, until the client closes it. net/http's own answer
// to "OPTIONS *" is off, so that h answers it too: that answer reads an
// announced body with no deadline.
func newServer(addr string, h http.Handler) *http.Server {
	return &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, DisableGeneralOptionsHandler: true}
}
