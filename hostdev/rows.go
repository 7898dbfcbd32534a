package hostdev

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/rig-go/rig/device"
)

// rowsPiece is the bytes a copy or fill of rows moves between two looks at
// whether the device's work ended: a memmove of it takes some tens of
// microseconds, and a look two atomic loads.
const rowsPiece = 256 << 10

// rowCost is the bytes a row counts for at least toward rowsPiece, for the
// work of each row beyond its bytes, so that rows of a few bytes look at
// the stop as often as a memmove of their count's worth would.
const rowCost = 64

// copyRows runs the copy or fill of rows p on a queue's goroutine. It
// looks at whether the device's work ended (Stop or a fault) after each
// rowsPiece bytes, as a launch does before each group, and returns there,
// leaving the rest of the part undone: the value's later parts are
// skipped, as the work of a stopped or faulted value is. It holds its
// regions' memory (region.copies) from one look to the next, and faults
// the device where a region was freed before the copy started or while it
// ran, at the first look after the Free, so that it writes no byte of
// memory that Free gave back.
func (d *dev) copyRows(p *part) {
	if !p.hold() {
		d.freedFault(p, "before the copy ran")
		return
	}
	held := true
	defer func() {
		// A panic of a piece, which runPart recovers, lets go too.
		if held {
			p.release()
		}
	}()
	rows, n := p.rows, p.rowBytes
	srcPitch, dstPitch := p.srcPitch, p.dstPitch
	if rows == 1 || (p.filling || srcPitch == n) && dstPitch == n {
		// Packed rows are one row of all their bytes. Room checked that
		// the last row ends within the regions, so rows*n fits.
		rows, n = 1, rows*n
	}
	since := uint64(0) // bytes counted since the last look
	for r := range rows {
		// A row copied onto bytes above its source within them moves as
		// one memmove would: from its end, so that no piece reads bytes
		// an earlier piece wrote, wherever the looks split the row.
		down := !p.filling && n > 0 && startsWithin(p.dst.bytes(p.dstOff+r*dstPitch, n), p.src.bytes(p.srcOff+r*srcPitch, n))
		for done := uint64(0); done < n; {
			k := min(n-done, rowsPiece-since)
			off := done
			if down {
				off = n - done - k
			}
			b := p.dst.bytes(p.dstOff+r*dstPitch+off, k)
			switch {
			case !p.filling:
				copy(b, p.src.bytes(p.srcOff+r*srcPitch+off, k))
			case p.fill32:
				fillWords(b, off, p.fillValue)
			case p.fillByte == 0:
				clear(b)
			default:
				for j := range b {
					b[j] = p.fillByte
				}
			}
			done += k
			since += max(k, rowCost)
			if since >= rowsPiece {
				since = 0
				p.release()
				held = false
				if h := d.rowsLook.Load(); h != nil {
					(*h)()
				}
				if d.dead() {
					return
				}
				if !p.hold() {
					d.freedFault(p, "while the copy ran")
					return
				}
				held = true
			}
		}
	}
}

// fillWords sets b, which starts at byte off of a fill of four-byte
// words, to the words' bytes: v little-endian from the fill's start.
func fillWords(b []byte, off uint64, v uint32) {
	var w [4]byte
	for i := range w {
		w[i] = byte(v >> (8 * ((off + uint64(i)) % 4)))
	}
	// Four bytes, then the bytes set so far copied after themselves.
	n := copy(b, w[:])
	for n < len(b) {
		n += copy(b[n:], b[:n])
	}
}

// startsWithin reports whether dst begins within src, past its first byte:
// a copy from src to dst front to back would read bytes it wrote.
func startsWithin(dst, src []byte) bool {
	s, t := uintptr(unsafe.Pointer(unsafe.SliceData(src))), uintptr(unsafe.Pointer(unsafe.SliceData(dst)))
	return t > s && t-s < uintptr(len(src))
}

// memory is the region whose memory r is: the region a peer view shows,
// or r itself.
func (r *region) memory() *region {
	if r.of != nil {
		return r.of
	}
	return r
}

// hold counts a copy of the rows p as touching its regions' memory, and
// reports whether the regions are live; where one is not, it counts
// nothing. A Free that stores freed before hold loads it makes hold
// report false; one that stores it after sees the count, and waits for
// release before it unmaps the memory (waitCopies).
func (p *part) hold() bool {
	p.dst.memory().copies.Add(1)
	if !p.filling {
		p.src.memory().copies.Add(1)
	}
	if p.dst.live() && (p.filling || p.src.live()) {
		return true
	}
	p.release()
	return false
}

// release ends what hold counted.
func (p *part) release() {
	p.dst.memory().copies.Add(-1)
	if !p.filling {
		p.src.memory().copies.Add(-1)
	}
}

// waitCopies waits until no copy of rows holds r's memory, which Free
// marked freed: a copy lets go at its next look, within a piece.
func (r *region) waitCopies() {
	for r.copies.Load() != 0 {
		runtime.Gosched()
	}
}

// freedFault faults the device for the copy of rows p, one of whose
// regions was freed when: freed Go memory stays reachable through the
// part, and freed Device memory may be mapped again for another region,
// so the device faults as a GPU's MMU would.
func (d *dev) freedFault(p *part, when string) {
	f := device.Faultf("copying rows: a region was freed %s", when)
	f.Detail = append(f.Detail, fmt.Sprintf("destination %#x", p.dst.addr))
	if !p.filling {
		f.Detail = append(f.Detail, fmt.Sprintf("source %#x", p.src.addr))
	}
	d.faultWith(f)
}
