package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/rig-go/rig/examples/server/service"
)

// options is the server's command line.
type options struct {
	addr, device   string
	slots          int
	debug, standby bool
	drain          time.Duration
}

// parseFlags parses the command line args. A bad flag, or an argument
// after the flags, is an error, after which flag's usage is written to
// stderr; -h is flag.ErrHelp.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.addr, "addr", "localhost:8080", "the address to listen on")
	fs.StringVar(&o.device, "device", "auto", "auto, host, nv:N or cuda:N")
	fs.IntVar(&o.slots, "slots", service.DefaultSlots, "the requests whose work is on the device at once; 0 for the service's default")
	fs.BoolVar(&o.debug, "debug", false, "serve /debug/spin and /debug/fault, which let any client that reaches -addr lose the device: never on an address others reach")
	fs.BoolVar(&o.standby, "standby", true, "keep a standby device open, which requests move to at a loss (not on cuda)")
	fs.DurationVar(&o.drain, "drain", 0, "at SIGINT or SIGTERM, how long /readyz answers 503 while requests are still served, before the server shuts down: a load balancer's probe period")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, usage(fs, "unexpected argument %q: the server takes flags only (the address is -addr)", fs.Arg(0))
	}
	if o.drain < 0 {
		return o, usage(fs, "-drain %v: want a duration of 0 or more", o.drain)
	}
	if o.slots < 0 || o.slots > service.MaxSlots {
		return o, usage(fs, "-slots %d: want the requests whose work is on the device at once, 1 to %d, or 0 for the default %d", o.slots, service.MaxSlots, service.DefaultSlots)
	}
	return o, nil
}

// usage is the error of a bad flag, after which it writes fs's usage to
// its output, as flag does for the flags it refuses itself.
func usage(fs *flag.FlagSet, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	fmt.Fprintln(fs.Output(), err)
	fs.Usage()
	return err
}
