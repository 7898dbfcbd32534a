package hostram

import (
	"runtime"
	"testing"
)

// TestBytes checks that Linux reports the host's memory, and that it is at
// least what the Go runtime took from the system.
func TestBytes(t *testing.T) {
	n := Bytes()
	if runtime.GOOS != "linux" {
		if n != 0 {
			t.Fatalf("Bytes off Linux = %d, want 0", n)
		}
		return
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if n == 0 || n < ms.Sys {
		t.Fatalf("Bytes = %d, below the %d bytes the Go runtime holds", n, ms.Sys)
	}
}
