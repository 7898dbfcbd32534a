package hostdev

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// TestStress runs devices that wait on each other's words with random
// work on both queues, stops them at random moments, and checks that each
// word ends at its device's last value and every goroutine ends.
func TestStress(t *testing.T) {
	rounds := 20
	if testing.Short() {
		rounds = 3
	}
	for round := range rounds {
		rng := rand.New(rand.NewPCG(uint64(round), 7))
		const n = 3
		var ds [n]*dev
		var ws [n]*uint64
		for i := range ds {
			ds[i], ws[i] = newDev(t, Config{Ring: 1 + rng.IntN(64), Grow: rng.IntN(2) == 0}, rng.Uint64())
		}
		var wg sync.WaitGroup
		for i := range ds {
			d := ds[i]
			salt := rng.Uint64()
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(salt, 1))
				e := entry(t, d, "test.index")
				sl := entry(t, d, "sleep")
				r, _ := alloc(t, d, 1<<16)
				other := ds[(rng.IntN(n-1)+1+indexOf(ds[:], d))%n]
				deadline := time.Now().Add(time.Duration(rng.IntN(30)) * time.Millisecond)
				for time.Now().Before(deadline) {
					s := &device.Submission{Timed: rng.IntN(2) == 0, Value: d.q.last.Load() + 1}
					if rng.IntN(3) == 0 {
						// A wait on the other device's word, at a value it
						// has reached or will reach soon.
						s.Waits = []device.Wait{{Word: other.word, Value: atomic.LoadUint64(other.word) + uint64(rng.IntN(2))}}
					}
					for k := rng.IntN(4); k >= 0; k-- {
						switch rng.IntN(4) {
						case 0:
							s.Parts = append(s.Parts, launch(e, [3]uint32{uint32(1 + rng.IntN(8)), 1, 1}, [3]uint32{uint32(1 + rng.IntN(64)), 1, 1}, p64(addr(r))))
						case 1:
							s.Parts = append(s.Parts, one(sl, p64(uint64(rng.IntN(100_000)))))
						default:
							p := device.Part{Kind: device.CopyRows, Queue: rng.IntN(2), Src: r, Dst: r,
								SrcOffset: 1 << 15, RowBytes: 64, Rows: uint64(1 + rng.IntN(16)), SrcPitch: 128, DstPitch: 256}
							if len(s.Parts) > 0 && rng.IntN(2) == 0 {
								p.After = 1 + rng.IntN(len(s.Parts))
							}
							s.Parts = append(s.Parts, p)
						}
					}
					for {
						a := d.Room(s)
						if a.Kind == device.RoomOK {
							break
						}
						if a.Kind == device.RoomGrow {
							if err := d.Grow(); err != nil {
								t.Errorf("grow: %v", err)
								return
							}
							continue
						}
						if a.Kind != device.RoomLater {
							t.Errorf("room answered %+v", a)
							return
						}
						if time.Now().After(deadline) {
							return // the value waits on a device that went idle
						}
						time.Sleep(50 * time.Microsecond)
					}
					if a := d.Submit(s); a.Kind != device.Committed {
						t.Errorf("submit answered %+v", a)
						return
					}
				}
			}()
		}
		wg.Wait()
		// Stop in a random order, some with work in flight.
		for _, i := range rng.Perm(n) {
			time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
			ds[i].Stop("")
		}
		for i, d := range ds {
			reach(t, d, d.q.last.Load())
			if got, want := atomic.LoadUint64(ws[i]), d.q.last.Load(); got != want {
				t.Fatalf("round %d: device %d's word at %d after stop, want %d", round, i, got, want)
			}
			d.done.Wait()
			st, err := d.Settle(nil)
			if err != nil {
				t.Fatal(err)
			}
			// Device order: no two values' work overlaps.
			for j := 1; j < len(st); j++ {
				if !device.AtLeast(st[j].Value, st[j-1].Value+1) || st[j].Start < st[j-1].End || st[j].End < st[j].Start {
					t.Fatalf("stamps %+v then %+v", st[j-1], st[j])
				}
			}
		}
	}
}

func indexOf(ds []*dev, d *dev) int {
	for i := range ds {
		if ds[i] == d {
			return i
		}
	}
	return -1
}
