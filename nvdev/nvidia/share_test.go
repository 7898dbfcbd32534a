package nvidia

import "testing"

// TestSharesSpace: paths of one GPU's state share its address space;
// paths of another, or no path, do not.
func TestSharesSpace(t *testing.T) {
	g, h := &gpuState{index: 0}, &gpuState{index: 1}
	a, b, c := &Client{gpuState: g}, &Client{gpuState: g}, &Client{gpuState: h}
	if !a.SharesSpace(b) || !b.SharesSpace(a) || !a.SharesSpace(a) {
		t.Error("paths of one GPU do not share its address space")
	}
	if a.SharesSpace(c) || a.SharesSpace(nil) || a.SharesSpace("x") || (&Client{}).SharesSpace(&Client{}) {
		t.Error("paths of different GPUs, or no path, share an address space")
	}
}
