package reclaim

import (
	"encoding/binary"
	"math"
	"testing"
)

// FuzzBudget runs a budget of a fuzzed limit through fuzzed Takes and
// Gives, each an int64 of the input, and checks the count against a model:
// a Take that fits counts its bytes and lacks nothing; one that does not
// counts nothing and lacks exactly the bytes past the limit; a Give of no
// more than is counted gives them back; and a negative count, or a Give of
// more than is counted, panics and leaves the count.
func FuzzBudget(f *testing.F) {
	input := func(limit int64, ops ...int64) []byte {
		b := binary.LittleEndian.AppendUint64(nil, uint64(limit))
		for _, op := range ops {
			b = binary.LittleEndian.AppendUint64(b, uint64(op))
		}
		return b
	}
	f.Add(input(100, 60, 50, 40, 1, ^60))
	f.Add(input(0, math.MaxInt64, 1, ^1, math.MaxInt64))
	f.Add(input(math.MaxInt64, math.MaxInt64-3, 4, ^(math.MaxInt64 - 3)))
	f.Add(input(-5, 1<<62, 1<<62, 1<<62-1, ^(1 << 62)))
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 8 {
			return
		}
		limit := int64(binary.LittleEndian.Uint64(in))
		b := NewBudget(limit)
		room := limit // the most the count may reach
		if limit <= 0 {
			room = math.MaxInt64
			if b.Limit() != 0 {
				t.Fatalf("NewBudget(%d).Limit() = %d, want 0", limit, b.Limit())
			}
		} else if b.Limit() != limit {
			t.Fatalf("NewBudget(%d).Limit() = %d", limit, b.Limit())
		}
		var used int64
		for in = in[8:]; len(in) >= 8; in = in[8:] {
			op := int64(binary.LittleEndian.Uint64(in))
			// An op of 0 or more takes op bytes; a negative one
			// gives ^op (0 to MaxInt64) back, or more than is counted.
			if op >= 0 {
				lack := b.Take(op)
				switch {
				case op <= room-used:
					if lack != 0 {
						t.Fatalf("limit %d, %d used: Take(%d) lacks %d, want 0", limit, used, op, lack)
					}
					used += op
				case lack != op-(room-used):
					t.Fatalf("limit %d, %d used: Take(%d) lacks %d, want %d", limit, used, op, lack, op-(room-used))
				}
			} else {
				n := ^op
				panicked := func() (p bool) {
					defer func() { p = recover() != nil }()
					b.Give(n)
					return false
				}()
				if panicked != (n > used) {
					t.Fatalf("limit %d, %d used: Give(%d) panicked: %v", limit, used, n, panicked)
				}
				if !panicked {
					used -= n
				}
			}
			if b.Used() != used {
				t.Fatalf("limit %d: the count is %d, want %d", limit, b.Used(), used)
			}
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("Take of a negative count did not panic")
				}
			}()
			b.Take(-1)
		}()
		if b.Used() != used {
			t.Fatalf("limit %d: a refused Take moved the count to %d, want %d", limit, b.Used(), used)
		}
	})
}
