package nvdev

import "github.com/rig-go/rig/nvdev/hw"

// The launch that releases its own value writes it through release slot 0
// of its descriptor. A launch releases its own value only where the value's
// low 32 bits are not 0, so its high 32 bits equal those of the value
// before, and a release of the low 32 bits moves the word from
// v - 1 to v as well as one of 64; which structure and payload size the
// compute engine takes with a 64-bit payload is what the GPU tests weigh
// (TestGPUReleaseForms, docs/nvdev.md).

// releaseForm is a form of the descriptor's release: its structure size
// (hw.ReleaseOneWord, hw.ReleaseFourWords, or 2 for two words) and
// whether its payload is 64 bits; on is false where launches release
// nothing and each value ends with its channel's semaphore release.
type releaseForm struct {
	name      string
	on        bool
	structure uint64
	payload64 bool
}

// releaseForms are the forms the GPU tests try, the first the default.
var releaseForms = []releaseForm{
	{"one word, 32 bits", true, hw.ReleaseOneWord, false},
	{"one word, 64 bits", true, hw.ReleaseOneWord, true},
	{"four words, 64 bits", true, hw.ReleaseFourWords, true},
	{"two words, 64 bits", true, 2, true},
	{"four words, 32 bits", true, hw.ReleaseFourWords, false},
	{"off", false, 0, false},
}

// ownRelease is the form devices use.
var ownRelease = releaseForms[0]

// set makes release slot 0 of q write value into the word at addr as the
// launch completes, after a system-wide memory barrier.
func (f releaseForm) set(q hw.Qmd, addr, value uint64) {
	q.SetRelease(0, addr, value)
	r := &q.L.Releases[0]
	r.StructureSize.Set(q.W, f.structure)
	p := uint64(0)
	if f.payload64 {
		p = 1
	}
	r.Payload64.Set(q.W, p)
}
