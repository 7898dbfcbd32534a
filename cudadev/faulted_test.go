package cudadev

import (
	"errors"
	"strings"
	"testing"
)

// TestFaultedError checks that the error of an open after a fault names
// the GPU and CUDA's error, says that CUDA keeps the fault for the process,
// and matches ErrFaulted and the CUDA error it wraps.
func TestFaultedError(t *testing.T) {
	cuda := &Error{Code: int(errIllegalAddress), Name: "CUDA_ERROR_ILLEGAL_ADDRESS", Text: "an illegal memory access was encountered"}
	err := faultedError(1, "0000:41:00.0", cuda)
	if !errors.Is(err, ErrFaulted) {
		t.Fatalf("%v does not match ErrFaulted", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Code != int(errIllegalAddress) {
		t.Fatalf("%v does not wrap CUDA's error", err)
	}
	for _, want := range []string{"GPU 1", "0000:41:00.0", "CUDA_ERROR_ILLEGAL_ADDRESS", "sticky error", "rest of the process", "restarts"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}
