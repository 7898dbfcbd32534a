package hostdev

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rig-go/rig/device"
)

// job is a launch that a queue goroutine shares with the helpers: they take
// its groups one at a time until none is left.
type job struct {
	// state is 1 while the job is open to helpers, plus 2 for each helper
	// that runs its groups.
	state atomic.Uint64
	fin   chan struct{} // the last helper of a closed job sends here
	next  atomic.Int64  // the next group to run
	total int64

	p *part
}

// worker is what a goroutine that runs groups owns.
type worker struct {
	ctx Ctx
}

// startWorkers starts the device's goroutines: the sequencer (which is also
// COMPUTE:0's goroutine), COPY:0's goroutine, and helpers-1 helpers that
// run launch groups beside the queue goroutine that launched them.
func (d *dev) startWorkers(helpers int) {
	d.copyIn = make(chan *slot)
	d.copyDone = make(chan struct{}, 1)
	d.jobs = make(chan *job, helpers-1)
	for q := range d.pokes {
		d.pokes[q] = make(chan struct{}, 1)
		d.launch[q] = job{fin: make(chan struct{}, 1)}
	}
	d.done.Add(2)
	go d.sequencer()
	go d.copier()
	for range helpers - 1 {
		d.done.Add(1)
		go d.helper()
	}
}

// newWorker is a worker of d.
func (d *dev) newWorker() *worker {
	w := &worker{}
	w.ctx.dev = d
	return w
}

// dead reports whether the device's work no longer runs: it faulted or
// stopped.
func (d *dev) dead() bool { return d.fault.Load() != nil || d.stopped.Load() }

// sequencer runs the values in order: it waits for a value's waits, runs
// its COMPUTE:0 parts itself while COPY:0's goroutine runs the others,
// stores the value into the word, and goes on to the next value. Once the
// device faulted it drops every value and stores nothing. It ends at Stop,
// having written the last value once no work runs.
func (d *dev) sequencer() {
	defer d.done.Done()
	debug.SetPanicOnFault(true)
	q := &d.q
	slots, n := q.slots, q.n // copies: the submitting goroutine stores beside them
	w := d.newWorker()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for seq := q.completed.Load(); ; seq++ {
		// The next value.
		for spin := 0; q.published.Load() == seq; spin++ {
			if d.stopped.Load() {
				d.end()
				return
			}
			if spin < 64 {
				runtime.Gosched()
				continue
			}
			select {
			case <-q.kick:
			case <-d.stop:
			}
		}
		sl := &slots[seq%n]
		if d.fault.Load() != nil {
			// A faulted device runs nothing more, and its word stays
			// before the value that faulted until Stop.
			sl.forget()
			q.completed.Store(seq + 1)
			continue
		}
		for i := range sl.waits {
			if !d.await(&sl.waits[i], timer) {
				d.end()
				q.dropFrom(seq)
				return
			}
		}
		d.mu.Lock()
		if d.stopped.Load() {
			d.mu.Unlock()
			d.end()
			q.dropFrom(seq)
			return
		}
		d.running = true
		d.mu.Unlock()

		if sl.timed {
			sl.start = device.Now()
		}
		var ends [2]int64
		if len(sl.parts) > 0 {
			ends = d.runValue(sl, w)
		}
		if sl.timed && !d.dead() {
			// A value whose work faulted, or was cut short by Stop, did
			// not complete: it has no stamp, as on a GPU.
			sl.end, sl.endQueue = device.Now(), device.Compute
			if ends[device.Copy] > ends[device.Compute] {
				sl.endQueue = device.Copy
			}
			q.stamp(sl)
		}

		d.mu.Lock()
		d.running = false
		if d.stopped.Load() {
			d.writeLast()
			d.mu.Unlock()
			q.dropFrom(seq)
			return
		}
		stored := d.fault.Load() == nil
		// The slot is given back before the word shows the value, so
		// that a Room that saw the value completed finds its room; the
		// value is read first, as a Submit may take the slot at once.
		v := sl.value
		sl.forget()
		q.completed.Store(seq + 1)
		if stored {
			atomic.StoreUint64(d.word, v)
			d.wakeLocked()
		}
		d.mu.Unlock()
		if stored {
			notifyStores()
		}
	}
}

// forget drops what the value sl holds outside its places in the launch
// ring (its parts' regions and fill functions) and what ties it to the
// ring's buffers (its parts' parameter bytes, the slot's parts and
// waits), once its parts ran or were skipped: a part keeps its place in
// the ring, and the slot its value's slices, until a later value takes
// them, and the Go memory of a region freed meanwhile, what a fill
// function holds, or an arena buffer that a growth replaced (whose bytes
// go back to the budget once its values completed), must not wait for
// that. The sequencer calls it before it counts the value completed,
// which hands the slot back to Submit, and on the values Stop dropped as
// it ends (dropFrom).
func (sl *slot) forget() {
	for i := range sl.parts {
		p := &sl.parts[i]
		p.src, p.dst, p.fill, p.params = nil, nil, nil, nil
	}
	sl.parts, sl.waits = nil, nil
}

// dropFrom forgets the values from seq on that were handed to the
// sequencer, the value seq among them where it ran when Stop came: none
// of them runs now, and the stopped device, which rig keeps for as long as
// its Device is reachable, must not hold their regions and fill functions.
// The sequencer calls it as it ends at Stop, once its work ended; the
// slots past the values published are Submit's, which a stopped device
// refuses.
func (q *queues) dropFrom(seq uint64) {
	for end := q.published.Load(); seq != end; seq++ {
		q.slots[seq%q.n].forget()
	}
}

// end writes the last value once the sequencer stops with no work running.
func (d *dev) end() {
	d.mu.Lock()
	d.writeLast()
	d.mu.Unlock()
}

// writeLast stores the last value submitted into the word, once. d.mu is
// held, and no work runs.
func (d *dev) writeLast() {
	if !d.final {
		d.final = true
		atomic.StoreUint64(d.word, d.q.last.Load())
		d.wakeLocked()
		notifyStores()
	}
}

// wakeLocked wakes the sleepers. d.mu is held.
func (d *dev) wakeLocked() {
	if d.sleeper {
		select {
		case d.token <- struct{}{}:
		default:
		}
	}
	if d.wake != nil {
		close(d.wake)
		d.wake = nil
	}
}

// stores wakes the waits of every host device once any host device stores
// its word, so that a wait on another host device's word ends at once
// rather than at its next poll.
var stores struct {
	waiting atomic.Int32 // waits blocked on ch
	mu      sync.Mutex   // guards ch
	ch      chan struct{}
}

// notifyStores wakes the waits blocked on stores, after a store of a word.
func notifyStores() {
	if stores.waiting.Load() == 0 {
		return
	}
	stores.mu.Lock()
	if stores.ch != nil {
		close(stores.ch)
		stores.ch = nil
	}
	stores.mu.Unlock()
}

// await waits until the word of w holds at least its value: it yields a
// few times, then blocks until a host device stores its word or a backoff
// from a microsecond to a millisecond ends, for words that other code
// stores. It reports false if the device stopped first.
func (d *dev) await(w *device.Wait, timer *time.Timer) bool {
	backoff := time.Microsecond
	for spin := 0; ; spin++ {
		if device.AtLeast(atomic.LoadUint64(w.Word), w.Value) {
			return true
		}
		if d.stopped.Load() {
			return false
		}
		if spin < 64 {
			runtime.Gosched()
			continue
		}
		stores.waiting.Add(1)
		stores.mu.Lock()
		if stores.ch == nil {
			stores.ch = make(chan struct{})
		}
		ch := stores.ch
		stores.mu.Unlock()
		if device.AtLeast(atomic.LoadUint64(w.Word), w.Value) {
			stores.waiting.Add(-1)
			return true
		}
		timer.Reset(backoff)
		select {
		case <-ch:
			timer.Stop()
		case <-timer.C:
			backoff = min(2*backoff, time.Millisecond)
		case <-d.stop:
			timer.Stop()
		}
		stores.waiting.Add(-1)
	}
}

// runValue runs the parts of the value sl: those of COMPUTE:0 on the
// calling goroutine, those of COPY:0 on the copier. It returns when each
// queue ended its parts. Where a part ends the sequencer's goroutine with
// runtime.Goexit, seqExit finishes the value and starts a new sequencer.
func (d *dev) runValue(sl *slot, w *worker) (ends [2]int64) {
	copying := sl.queues&(1<<device.Copy) != 0
	if copying {
		select {
		case d.copyIn <- sl:
		case <-d.stop:
			copying = false
		}
	}
	returned := false
	defer func() {
		if !returned {
			d.seqExit(sl, copying)
		}
	}()
	if sl.queues&(1<<device.Compute) != 0 {
		d.runQueue(sl, device.Compute, w)
		if sl.timed {
			ends[device.Compute] = device.Now()
		}
	}
	if copying {
		<-d.copyDone
		ends[device.Copy] = d.copyEnd
	}
	returned = true
	return ends
}

// goexitFault is the fault of a kernel or fill that called runtime.Goexit
// while doing something.
func goexitFault(doing string) *device.Fault {
	return device.Faultf("%s: runtime.Goexit ended the goroutine that ran it", doing)
}

// seqExit runs on the sequencer's goroutine while runtime.Goexit, called
// by a part of the value sl on COMPUTE:0, ends it. The part faulted the
// device (job.run and runPart record it), so no later value runs; seqExit
// does what the sequencer owed the value: it closes the launch and waits
// for its helpers, tells the copier that COMPUTE:0's parts are done and
// waits for COPY:0's, and counts the value completed, storing nothing into
// the word. It then starts a new sequencer, which drops the later values
// and writes the last one at Stop, or writes it itself where the device
// stopped.
func (d *dev) seqExit(sl *slot, copying bool) {
	d.faultWith(goexitFault("a part on COMPUTE:0"))
	d.launch[device.Compute].close()
	d.launch[device.Compute].p = nil // as runLaunch forgets it
	for i := range sl.parts {
		if p := &sl.parts[i]; p.queue == device.Compute {
			p.done.Store(true)
		}
	}
	select {
	case d.pokes[device.Copy] <- struct{}{}:
	default:
	}
	if copying {
		<-d.copyDone
	}
	d.mu.Lock()
	d.running = false
	if d.stopped.Load() {
		d.writeLast()
		d.mu.Unlock()
		d.q.dropFrom(d.q.completed.Load())
		return
	}
	sl.forget()
	d.q.completed.Store(d.q.completed.Load() + 1)
	d.mu.Unlock()
	d.done.Add(1)
	go d.sequencer()
}

// copier is COPY:0's goroutine.
func (d *dev) copier() {
	defer d.done.Done()
	debug.SetPanicOnFault(true)
	w := d.newWorker()
	for {
		select {
		case sl := <-d.copyIn:
			d.copyValue(sl, w)
		case <-d.stop:
			return
		}
	}
}

// copyValue runs COPY:0's parts of sl and hands the value back to the
// sequencer. Where a fill ends the copier's goroutine with runtime.Goexit,
// it does so all the same, and starts a new copier.
func (d *dev) copyValue(sl *slot, w *worker) {
	returned := false
	defer func() {
		if returned {
			return
		}
		d.faultWith(goexitFault("a part on COPY:0"))
		for i := range sl.parts {
			if p := &sl.parts[i]; p.queue == device.Copy {
				p.done.Store(true)
			}
		}
		select {
		case d.pokes[device.Compute] <- struct{}{}:
		default:
		}
		d.copyDone <- struct{}{}
		d.done.Add(1)
		go d.copier()
	}()
	d.runQueue(sl, device.Copy, w)
	if sl.timed {
		d.copyEnd = device.Now()
	}
	d.copyDone <- struct{}{}
	returned = true
}

// runQueue runs the parts of sl on queue q, in order, each after the part
// its After names.
func (d *dev) runQueue(sl *slot, q int, w *worker) {
	both := sl.queues == 3
	for i := range sl.parts {
		p := &sl.parts[i]
		if p.queue != q {
			continue
		}
		if p.after > 0 {
			if a := &sl.parts[p.after-1]; a.queue != q {
				for !a.done.Load() {
					select {
					case <-d.pokes[q]:
					case <-d.stop:
					}
					if d.stopped.Load() {
						break
					}
				}
			}
		}
		if !d.dead() {
			d.runPart(p, w, q)
		}
		if both { // only the other queue reads done
			p.done.Store(true)
			select {
			case d.pokes[1-q] <- struct{}{}:
			default:
			}
		}
	}
}

// runPart runs p on queue q's goroutine, turning a panic into a fault.
func (d *dev) runPart(p *part, w *worker, q int) {
	switch p.kind {
	case device.Launch:
		d.runLaunch(p, w, q)
	case device.CopyRows:
		defer d.recoverPart("copying rows")
		if p.rows == 0 || p.rowBytes == 0 {
			return
		}
		d.copyRows(p)
	case device.Fill:
		returned := false
		defer func() {
			if v := recover(); v != nil {
				d.faultWith(panicFault("running a fill", v))
			} else if !returned {
				d.faultWith(goexitFault("running a fill"))
			}
		}()
		p.fill(p.arg)
		returned = true
	}
}

// recoverPart turns the panic of a part's run, if any, into a fault.
func (d *dev) recoverPart(doing string) {
	if v := recover(); v != nil {
		d.faultWith(panicFault(doing, v))
	}
}

// panicFault is the fault of a panic v while doing something. v is the
// user's value, whose methods may panic in turn: such a panic (which fmt
// lets through where the value it panics with panics too as it prints)
// would escape the recovery that called panicFault, so it is recovered
// here, and the fault names v's type instead.
func panicFault(doing string, v any) (f *device.Fault) {
	if fp, ok := v.(faultPanic); ok {
		return &device.Fault{Why: fp.why}
	}
	defer func() {
		if recover() != nil {
			f = device.Faultf("%s: panic: a value of type %T, whose formatting panicked", doing, v)
		}
	}()
	f = device.Faultf("%s: panic: %v", doing, v)
	if a, ok := v.(interface{ Addr() uintptr }); ok {
		f.Detail = append(f.Detail, fmt.Sprintf("faulting address %#x", a.Addr()))
	}
	return f
}

// endWork closes d.ended, which ends the kernels that wait on
// Ctx.Stopped.
func (d *dev) endWork() { d.endOnce.Do(func() { close(d.ended) }) }

// faultWith records the device's first fault and wakes the sleepers.
func (d *dev) faultWith(f *device.Fault) {
	// The word, read under mu before the fault is known, holds every
	// value that completed: no store follows once it is.
	d.mu.Lock()
	if d.fault.Load() == nil {
		f.Reached, f.HasReached = atomic.LoadUint64(d.word), true
	}
	first := d.fault.CompareAndSwap(nil, f)
	d.mu.Unlock()
	if first {
		d.endWork()
		d.mu.Lock()
		d.wakeLocked()
		d.mu.Unlock()
	}
}

// runLaunch runs the launch p over its groups: on the queue goroutine, and
// on as many idle helpers as it has groups beyond the first.
func (d *dev) runLaunch(p *part, w *worker, q int) {
	j := &d.launch[q]
	j.p = p
	j.total = int64(p.groups[0]) * int64(p.groups[1]) * int64(p.groups[2])
	j.next.Store(0)
	j.state.Store(1)
	for range min(j.total-1, int64(cap(d.jobs))) {
		select {
		case d.jobs <- j:
		default:
		}
	}
	j.run(d, w)
	j.close()
	j.p = nil
}

// close closes the job to helpers, and waits for the helpers that took it.
func (j *job) close() {
	for {
		s := j.state.Load()
		if j.state.CompareAndSwap(s, s&^1) {
			if s>>1 != 0 {
				<-j.fin
			}
			return
		}
	}
}

// leave ends a helper's run of j, telling the job's closer where it was
// the last.
func (j *job) leave() {
	if j.state.Add(^uint64(1)) == 0 { // minus 2
		j.fin <- struct{}{}
	}
}

// helper is a goroutine that runs groups of the launches it is handed.
func (d *dev) helper() {
	defer d.done.Done()
	debug.SetPanicOnFault(true)
	w := d.newWorker()
	for {
		select {
		case j := <-d.jobs:
			if !j.join() {
				continue
			}
			d.help(j, w)
		case <-d.stop:
			return
		}
	}
}

// help runs groups of j on a helper. Where a kernel ends the helper's
// goroutine with runtime.Goexit, it faults the device, leaves the job all
// the same, and starts a new helper. job.run faults the device first, but
// its recovery may itself be ended so: by a Goexit in the formatting of a
// panic's value, which would leave a group's work undone and the device
// running.
func (d *dev) help(j *job, w *worker) {
	returned := false
	defer func() {
		if !returned {
			d.faultWith(goexitFault(fmt.Sprintf("kernel %q", j.p.kern.name)))
			j.leave()
			d.done.Add(1)
			go d.helper()
		}
	}()
	j.run(d, w)
	returned = true
	j.leave()
}

// join enters j if it is open.
func (j *job) join() bool {
	for {
		s := j.state.Load()
		if s&1 == 0 {
			return false
		}
		if j.state.CompareAndSwap(s, s+2) {
			return true
		}
	}
}

// run runs groups of j until none is left or the device's work ended.
func (j *job) run(d *dev, w *worker) {
	p := j.p
	c := &w.ctx
	returned := false
	defer func() {
		if v := recover(); v != nil {
			d.faultWith(panicFault(fmt.Sprintf("kernel %q", p.kern.name), v))
		} else if !returned {
			d.faultWith(goexitFault(fmt.Sprintf("kernel %q", p.kern.name)))
		}
		// The region Bytes found last is forgotten too, so that a
		// freed region's Go memory is not kept past the launch.
		c.Params, c.Shared, c.last = nil, nil, nil
	}()
	c.kernel = p.kern.name
	c.Groups, c.Threads, c.Params = p.groups, p.threads, p.params
	if p.shared > 0 && c.shared == nil {
		c.shared = make([]byte, MaxShared)
	}
	c.Shared = c.shared[:p.shared:p.shared]
	fn := p.kern.fn
	gx, gy := int64(p.groups[0]), int64(p.groups[1])
	tx, ty, tz := p.threads[0], p.threads[1], p.threads[2]
	for !d.dead() {
		g := j.next.Add(1) - 1
		if g >= j.total {
			break
		}
		c.Group = [3]int{int(g % gx), int(g / gx % gy), int(g / (gx * gy))}
		clear(c.Shared)
		for z := range tz {
			for y := range ty {
				for x := range tx {
					c.Thread = [3]int{x, y, z}
					fn(c)
				}
			}
		}
	}
	returned = true
}

// Sleep blocks until the word differs from seen, a fault, Stop, or still
// elapses: it returns at once where the device stopped before it. It
// returns the device's fault once it faulted.
func (d *dev) Sleep(seen uint64, still time.Duration) error {
	if f := d.fault.Load(); f != nil {
		return f
	}
	if atomic.LoadUint64(d.word) != seen || d.stopped.Load() {
		return nil
	}
	// Only the supervisor sleeps, so the token and the timer are nearly
	// always free; another sleeper waits on a channel of its own.
	if d.sleepMu.TryLock() {
		defer d.sleepMu.Unlock()
		d.mu.Lock()
		d.sleeper = true
		d.mu.Unlock()
		defer func() {
			d.mu.Lock()
			d.sleeper = false
			d.mu.Unlock()
		}()
		select {
		case <-d.token: // a wake of an earlier sleep
		default:
		}
		if f := d.fault.Load(); f != nil {
			return f
		}
		if atomic.LoadUint64(d.word) != seen || d.stopped.Load() {
			return nil
		}
		if d.sleepTimer == nil {
			d.sleepTimer = time.NewTimer(still)
		} else {
			d.sleepTimer.Reset(still)
		}
		select {
		case <-d.token:
			d.sleepTimer.Stop()
		case <-d.sleepTimer.C:
		}
	} else {
		d.mu.Lock()
		if d.wake == nil {
			d.wake = make(chan struct{})
		}
		ch := d.wake
		d.mu.Unlock()
		if f := d.fault.Load(); f != nil {
			return f
		}
		if atomic.LoadUint64(d.word) != seen || d.stopped.Load() {
			return nil
		}
		t := time.NewTimer(still)
		defer t.Stop()
		select {
		case <-ch:
		case <-t.C:
		}
	}
	if f := d.fault.Load(); f != nil {
		return f
	}
	return nil
}

// Stop stops the device without waiting for its work: hanging kernels and
// pending waits end, queued values are dropped, and the last value
// submitted goes into the word once no work runs — before Stop returns
// where none runs now. Every goroutine of the device then ends. fault is
// recorded nowhere: rig already knows why it lost the device.
func (d *dev) Stop(fault string) error {
	d.stopOnce.Do(func() {
		d.mu.Lock()
		d.stopped.Store(true)
		close(d.stop)
		d.endWork()
		if !d.running {
			d.writeLast()
		}
		d.wakeLocked()
		d.mu.Unlock()
	})
	return nil
}
