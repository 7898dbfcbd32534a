package rig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/timeline"
)

func openFake(t *testing.T, name string, f *fake) *Device {
	t.Helper()
	return openWith(t, f.opener(name))
}

// openWith opens the device of op, closed when the test ends.
func openWith(t *testing.T, op device.Opener) *Device {
	t.Helper()
	d, err := Open(context.Background(), op)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = d.Close()
		<-d.Done()
	})
	return d
}

// empty is a submission of no parts.
func empty(t *testing.T, d *Device) *Submission {
	t.Helper()
	s, err := NewSubmission(d)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func submit(t *testing.T, s *Submission, bufs ...*Buffer) Point {
	t.Helper()
	p, err := s.Take().Submit(context.Background(), bufs...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOneDevicePerName(t *testing.T) {
	f := newFake()
	d := openFake(t, "once", f)
	if _, err := Open(context.Background(), newFake().opener("once")); !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "is open") {
		t.Fatalf("second open of a name: %v, want an error matching ErrInUse", err)
	}
	// An open of a name while another open of it is under way.
	entered, release := make(chan struct{}), make(chan struct{})
	slow := newFake().opener("slow")
	mk := slow.Make
	slow.Make = func(w *uint64) (device.Driver, error) {
		close(entered)
		<-release
		return mk(w)
	}
	first := make(chan error, 1)
	go func() {
		d, err := Open(context.Background(), slow)
		if err == nil {
			err = d.Close()
		}
		first <- err
	}()
	<-entered
	if _, err := Open(context.Background(), newFake().opener("slow")); !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "under way") {
		t.Errorf("an open of a name during another: %v, want an error matching ErrInUse", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	<-d.Done()
	d2, err := Open(context.Background(), newFake().opener("once"))
	if err != nil {
		t.Fatalf("open after the first device was reaped: %v", err)
	}
	_ = d2.Close()
	<-d2.Done()
}

func TestOpenOfAStillRunningName(t *testing.T) {
	f := newFake()
	f.held = true
	d, err := Open(context.Background(), f.opener("running"))
	if err != nil {
		t.Fatal(err)
	}
	submit(t, empty(t, d))
	// The fake's Stop writes the last value only where it was submitted:
	// keep the word below it to model work that still runs.
	f.mu.Lock()
	f.submitted = nil
	f.mu.Unlock()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := Open(ctx, newFake().opener("running")); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "still runs") {
		t.Fatalf("open while the closed device's work runs: %v", err)
	}
	// An open that waits gets the name once the old device gave it back.
	opened := make(chan error, 1)
	go func() {
		e, err := Open(context.Background(), newFake().opener("running"))
		if err == nil {
			err = e.Close()
			<-e.Done()
		}
		opened <- err
	}()
	f.complete(d.Last().Value())
	<-d.Done()
	if err := <-opened; err != nil {
		t.Fatalf("open once the closed device's work ended: %v", err)
	}
}

func TestWrap(t *testing.T) {
	for _, c := range []struct {
		name string
		own  bool
	}{{"array word", false}, {"own word", true}} {
		t.Run(c.name, func(t *testing.T) {
			const start = math.MaxUint64 - 3
			f := newFake()
			if c.own {
				f.keepOwnWord(start)
			} else {
				// Open takes the lowest free slot of the array.
				i, w, err := timeline.Take()
				if err != nil {
					t.Fatal(err)
				}
				timeline.Store(w, start)
				timeline.Give(i)
			}
			d := openFake(t, "wrap", f)
			if d.base != start {
				t.Fatalf("values start after %d, want %d", d.base, uint64(start))
			}
			s := empty(t, d)
			var pts []Point
			for i := 0; i < 8; i++ {
				pts = append(pts, submit(t, s))
			}
			if pts[3].Value() != 0 || pts[2].Value() != math.MaxUint64 {
				t.Fatalf("values %d, %d around the wrap", pts[2].Value(), pts[3].Value())
			}
			for i, p := range pts {
				if !p.Reached() {
					t.Fatalf("point %d (%d) not reached with the word at %d", i, p.Value(), d.read())
				}
				if err := p.Wait(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			f.held = true
			p := submit(t, s)
			if p.Reached() {
				t.Fatal("a point past the word counts as reached")
			}
			go func() { time.Sleep(5 * time.Millisecond); f.complete(p.Value()) }()
			if err := p.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestRoomAnswers(t *testing.T) {
	t.Run("later", func(t *testing.T) {
		f := newFake()
		f.held = true
		d := openFake(t, "later", f)
		s := empty(t, d)
		first := submit(t, s)
		f.mu.Lock()
		f.rooms = []device.RoomAnswer{{Kind: device.RoomLater}}
		f.mu.Unlock()
		done := make(chan Point)
		go func() { done <- submit(t, s) }()
		select {
		case <-done:
			t.Fatal("a submission went through while the room answered later")
		case <-time.After(20 * time.Millisecond):
		}
		f.complete(first.Value())
		if p := <-done; p.Value() != first.Value()+1 {
			t.Fatalf("value %d after back-pressure, want %d", p.Value(), first.Value()+1)
		}
		// Back-pressure honours the context.
		f.mu.Lock()
		f.rooms = []device.RoomAnswer{{Kind: device.RoomLater}}
		f.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		if _, err := s.Take().Submit(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("held back past the deadline: %v", err)
		}
		f.complete(d.Last().Value())
	})
	t.Run("grow", func(t *testing.T) {
		f := newFake()
		d := openFake(t, "grow", f)
		s := empty(t, d)
		f.rooms = []device.RoomAnswer{{Kind: device.RoomGrow}, {Kind: device.RoomGrow}}
		f.growth = []error{&device.Short{N: 100}, nil}
		submit(t, s)
		if f.grows != 2 || f.count() != 1 {
			t.Fatalf("%d growths and %d submissions, want 2 and 1", f.grows, f.count())
		}
	})
	t.Run("short to out of memory", func(t *testing.T) {
		f := newFake()
		d := openFake(t, "short", f)
		s := empty(t, d)
		for i := 0; i < 6; i++ {
			f.rooms = append(f.rooms, device.RoomAnswer{Kind: device.RoomGrow})
			f.growth = append(f.growth, &device.Short{N: 4096})
		}
		_, err := s.Take().Submit(context.Background())
		var oom *OutOfMemoryError
		if !errors.Is(err, ErrOutOfMemory) || !errors.As(err, &oom) || oom.Lacking != 4096 {
			t.Fatalf("after five Shorts: %v", err)
		}
		if f.grows != 5 || f.count() != 0 {
			t.Fatalf("%d growths, %d submitted: want 5 asks and nothing submitted", f.grows, f.count())
		}
	})
	t.Run("never", func(t *testing.T) {
		f := newFake()
		d := openFake(t, "never", f)
		b, _ := d.Alloc(device.DeviceMemory, 64)
		s, err := NewSubmission(d, Copy(0, 0, 0, 32, 16))
		if err != nil {
			t.Fatal(err)
		}
		f.rooms = []device.RoomAnswer{{Kind: device.RoomNever, Part: 0, Reason: "a copy of 16 bytes on queue 7"}}
		before := d.Last()
		_, err = s.Take().Submit(context.Background(), b)
		var ref *RefusalError
		if !errors.Is(err, ErrRefused) || !errors.As(err, &ref) || ref.Part != 0 || ref.Kind != device.CopyRows || !strings.Contains(err.Error(), "queue 7") {
			t.Fatalf("refusal: %v", err)
		}
		if d.Last() != before || f.count() != 0 || b.LastUse().Device() != nil {
			t.Fatal("a refused submission took a value, reached the driver, or marked its buffer")
		}
	})
}

func TestPendingCommittedByWait(t *testing.T) {
	f := newFake()
	f.pending, f.held = true, true
	d := openFake(t, "pending", f)
	s := empty(t, d)
	p := submit(t, s)
	go func() {
		for {
			f.mu.Lock()
			n := len(f.commits)
			f.mu.Unlock()
			if n > 0 {
				f.complete(p.Value())
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	if err := p.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(f.commits) != 1 || f.commits[0] != p.Value() {
		t.Fatalf("commits %v, want [%d]", f.commits, p.Value())
	}
	if err := p.Wait(context.Background()); err != nil || len(f.commits) != 1 {
		t.Fatal("a wait on a committed point committed again")
	}
}

func TestFailedSubmitLoses(t *testing.T) {
	f := newFake()
	f.fail = "running a fill: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"
	d := openFake(t, "failed", f)
	s := empty(t, d)
	_, err := s.Take().Submit(context.Background())
	if !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), "CUDA_ERROR_ILLEGAL_ADDRESS") {
		t.Fatalf("failed submit: %v", err)
	}
	if _, err := s.Take().Submit(context.Background()); !errors.Is(err, ErrLost) {
		t.Fatalf("submit after the loss: %v", err)
	}
	if f.count() != 1 {
		t.Fatalf("%d submissions reached the driver after its failure", f.count())
	}
}

// TestReadFault: the driver's further reading of a fault
// (device.FaultReader) runs after the waiters were woken with the loss and
// before Stop; its lines follow the fault's own in LostError.Detail and
// %+v once Done is closed, and are logged.
func TestReadFault(t *testing.T) {
	var out bytes.Buffer
	var outMu sync.Mutex
	SetLogger(slog.New(slog.NewTextHandler(lockedWriter{&outMu, &out}, nil)))
	defer SetLogger(nil)
	f := newFake()
	f.held = true
	reading, release := make(chan *device.Fault, 1), make(chan struct{})
	f.readFault = func(fault *device.Fault) []string {
		f.mu.Lock()
		stopped := f.stopped
		f.mu.Unlock()
		if stopped {
			t.Error("ReadFault after Stop")
		}
		reading <- fault
		<-release
		return []string{"SM 3: warp ESR 0x10"}
	}
	d := openFake(t, "read fault", f)
	p := submit(t, empty(t, d))
	// The waiter parks with the supervisor before the fault, so that the
	// supervisor holds it when the loss comes.
	d.spin.Store(0)
	waited := make(chan error, 1)
	go func() { waited <- p.Wait(context.Background()) }()
	for d.stats.waitsParked.Load() == 0 {
		time.Sleep(100 * time.Microsecond)
	}
	fault := &device.Fault{Why: "error 13 on the COMPUTE channel", Detail: []string{"notifier line"}}
	f.mu.Lock()
	f.sleepErr = fault
	f.cond.Broadcast()
	f.mu.Unlock()
	err := <-waited
	var le *LostError
	if !errors.As(err, &le) || le.Fault != fault {
		t.Fatalf("the wait answered %v, want the loss by the fault", err)
	}
	// The waiter woke while the driver still reads.
	if got := <-reading; got != fault {
		t.Fatalf("ReadFault got %v, want the driver's fault", got)
	}
	if got := le.Detail(); !slices.Equal(got, []string{"notifier line"}) {
		t.Errorf("Detail before the read ended: %q", got)
	}
	close(release)
	_ = d.Close()
	<-d.Done()
	want := []string{"notifier line", "SM 3: warp ESR 0x10"}
	if got := le.Detail(); !slices.Equal(got, want) {
		t.Errorf("Detail after Done: %q, want %q", got, want)
	}
	if got := fmt.Sprintf("%+v", err); !strings.HasSuffix(got, "\n\tnotifier line\n\tSM 3: warp ESR 0x10") {
		t.Errorf("%%+v: %q", got)
	}
	if n := f.reads.Load(); n != 1 {
		t.Errorf("ReadFault called %d times, want once", n)
	}
	outMu.Lock()
	log := out.String()
	outMu.Unlock()
	if !strings.Contains(log, "the fault's detail") || !strings.Contains(log, "SM 3: warp ESR 0x10") {
		t.Errorf("the log lacks the detail:\n%s", log)
	}
}

// TestReadFaultNotOnHang: a loss without a driver's fault (no progress)
// asks the driver to read nothing.
func TestReadFaultNotOnHang(t *testing.T) {
	f := newFake()
	f.held = true
	f.facts.HangMs = 20
	d := openFake(t, "hang read", f)
	p := submit(t, empty(t, d))
	if err := p.Wait(context.Background()); !errors.Is(err, ErrLost) {
		t.Fatalf("the wait answered %v, want the loss", err)
	}
	_ = d.Close()
	<-d.Done()
	if n := f.reads.Load(); n != 0 {
		t.Errorf("ReadFault called %d times on a hang", n)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestFaultDomain(t *testing.T) {
	a, b, c := newFake(), newFake(), newFake()
	a.facts.FaultDomain, b.facts.FaultDomain = "gpu", "gpu"
	a.held, b.held, c.held = true, true, true
	da, db, dc := openFake(t, "A", a), openFake(t, "B", b), openFake(t, "C", c)
	pa, pb, pc := submit(t, empty(t, da)), submit(t, empty(t, db)), submit(t, empty(t, dc))
	errs := make(chan error, 2)
	go func() { errs <- pb.Wait(context.Background()) }()
	time.Sleep(5 * time.Millisecond)
	a.mu.Lock()
	a.sleepErr = &device.Fault{Why: "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered", Detail: []string{"line"}}
	a.cond.Broadcast()
	a.mu.Unlock()
	if err := pa.Wait(context.Background()); !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), "ILLEGAL_ADDRESS") {
		t.Fatalf("waiter of the faulted device: %v", err)
	}
	if err := <-errs; !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), "device A") {
		t.Fatalf("waiter of a device of the same fault domain: %v", err)
	}
	if dc.Err() != nil {
		t.Fatalf("a device of no fault domain was lost: %v", dc.Err())
	}
	c.complete(pc.Value())
	var le *LostError
	if !errors.As(da.Err(), &le) || le.Fault == nil {
		t.Fatal("the loss carries no fault")
	}
	if s := strings.Count(fmtPlusV(da.Err()), "\n"); s != 1 {
		t.Fatalf("%%+v prints %d detail lines, want 1", s)
	}
	_ = da.Close()
	if a.stopFault == "" {
		t.Fatal("Stop of a lost device got no fault")
	}
}

func TestHangBound(t *testing.T) {
	f := newFake()
	f.held = true
	f.facts.HangMs = 40
	d := openFake(t, "hang", f)
	p := submit(t, empty(t, d))
	start := time.Now()
	err := p.Wait(context.Background())
	if !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), "no progress for 40 ms") {
		t.Fatalf("wait on a hung device: %v", err)
	}
	if el := time.Since(start); el < 40*time.Millisecond {
		t.Fatalf("lost after %v, before the bound", el)
	}
}

func TestEntryReclaim(t *testing.T) {
	f := newFake()
	d := openFake(t, "entry", f)
	img, err := d.LoadImage([]byte("img"))
	if err != nil {
		t.Fatal(err)
	}
	f.entryErr = []error{&device.NoMemory{N: 10}, &device.NoMemory{N: 10}}
	if _, err := img.Resolve("k"); err != nil {
		t.Fatalf("resolve after two rounds: %v", err)
	}
	for range 5 {
		f.entryErr = append(f.entryErr, &device.NoMemory{N: 99})
	}
	if _, err := img.Resolve("k2"); !errors.Is(err, ErrOutOfMemory) || !strings.Contains(err.Error(), "99 bytes") {
		t.Fatalf("resolve after five No_memory: %v", err)
	}
	if _, err := img.Resolve("absent"); !errors.Is(err, ErrNoFunction) {
		t.Fatalf("resolve of an absent function: %v", err)
	}
}

func TestPlacedImage(t *testing.T) {
	f := newFake()
	f.facts.Budget = 1000
	d := openFake(t, "place", f)
	img, err := d.LoadImage([]byte("place"))
	if err != nil {
		t.Fatal(err)
	}
	if used, _ := d.Budget(); used != 128 {
		t.Fatalf("a placed image of 100 bytes counts %d, want 128: two units of the driver's alignment of 64", used)
	}
	if err := img.Unload(); err != nil {
		t.Fatal(err)
	}
	if used, _ := d.Budget(); used != 0 || f.unloads != 1 || f.frees != 1 {
		t.Fatalf("after unload: %d bytes counted, %d unloads, %d frees", used, f.unloads, f.frees)
	}
}

// TestHugePlacedImage loads an image whose driver asks for a place of
// nearly 2^63 bytes, which rounded up to whole words passes the largest
// int: LoadImage returns an error naming it, and the device counts
// nothing and stays usable.
func TestHugePlacedImage(t *testing.T) {
	f := newFake()
	d := openFake(t, "huge place", f)
	if _, err := d.LoadImage([]byte("huge place")); err == nil || !strings.Contains(err.Error(), "place") {
		t.Fatalf("a place of %d bytes: %v", math.MaxInt-1, err)
	}
	if used, _ := d.Budget(); used != 0 {
		t.Fatalf("after the refused image %d bytes are counted", used)
	}
	if _, err := d.LoadImage([]byte("place")); err != nil {
		t.Fatalf("an image after the refused one: %v", err)
	}
}

func TestCapability(t *testing.T) {
	key := device.NewKey[string]("fake")
	other := device.NewKey[string]("other")
	f := newFake()
	f.facts.Capability = key
	d := openFake(t, "caps", f)
	if c, ok := Capability(d, key); !ok || c != "fake caps" {
		t.Fatalf("Capability = %q, %v", c, ok)
	}
	if _, ok := Capability(d, other); ok {
		t.Fatal("a key the driver does not declare answered")
	}
}

// TestNoCommitAfterClose checks that a commit asked for once Close began,
// such as by a wait or by another device's submission, makes no driver
// call: Stop writes the last value, and nothing may follow it.
func TestNoCommitAfterClose(t *testing.T) {
	f := newFake()
	f.pending, f.held = true, true
	d, err := Open(context.Background(), f.opener("closing"))
	if err != nil {
		t.Fatal(err)
	}
	p := submit(t, empty(t, d))
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	<-d.Done()
	if err := d.commit(p.v); err != nil {
		t.Fatalf("commit on a closed device: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.commits) != 0 {
		t.Fatalf("the driver was asked to commit %v after Stop", f.commits)
	}
}
