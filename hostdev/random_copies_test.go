package hostdev_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/rig-go/rig/hostdev"
	"github.com/rig-go/rig/internal/gputest"
	"github.com/rig-go/rig/internal/testutil"
)

// TestRandomCopies runs the GPU drivers' randomized check of copies and
// fills (gputest.RandomCopies) on host devices, a few keys, each on a
// device of its own configuration: with lent host memory or without, a
// ring of 2 or 5 values that pushes back on the submissions in flight,
// and a ring that grows. The host device runs every part it draws, a
// fill of four-byte words of a buffer whose address is not a multiple of
// 4 included, so that no submission may be refused.
//
// RIG_RANDOM_KEY=s runs key s alone, and RIG_RANDOM_KEYS=k keys 0 to
// k-1; -short takes fewer steps.
func TestRandomCopies(t *testing.T) {
	steps, keys := 500, []uint64{0, 1, 2, 3}
	if testing.Short() {
		steps, keys = 150, keys[:3]
	}
	if s := os.Getenv("RIG_RANDOM_KEYS"); s != "" {
		k, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("RIG_RANDOM_KEYS=%q: %v", s, err)
		}
		keys = keys[:0]
		for i := range k {
			keys = append(keys, uint64(i))
		}
	}
	if s := os.Getenv("RIG_RANDOM_KEY"); s != "" {
		key, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("RIG_RANDOM_KEY=%q: %v", s, err)
		}
		keys = []uint64{key}
	}
	for _, key := range keys {
		c := hostdev.Config{
			Name:     fmt.Sprintf("random-copies-%d", key),
			MapsHost: key%2 == 0,
			Ring:     []int{0, 2, 5}[key%3],
			Grow:     key%4 == 3,
		}
		t.Run(fmt.Sprintf("key=%d", key), func(t *testing.T) {
			t.Parallel()
			dev := testutil.Open(t, hostdev.Open(c))
			if n := gputest.RandomCopies(t, dev, key, steps); n != 0 {
				t.Errorf("the host device refused %d submissions", n)
			}
		})
	}
}
