package hw

import "fmt"

// A push buffer is a sequence of 32-bit words: method headers, each
// followed by its data words. The header layout mirrors NVIDIA's
// clc56f.h (NVC56F_DMA_*), which C86F keeps: SEC_OP in bits 31:29, the
// count (or the immediate data) in 28:16, the subchannel in 15:13 and the
// method's byte offset divided by 4 in 11:0.

// Subchannel is one of the eight slots of a channel that an engine's
// object is bound to with SET_OBJECT.
type Subchannel uint32

// The subchannels the device binds, as tinygrad, NVK and libcuda do.
const (
	// SubHost carries host (PBDMA) methods, those below 0x100, such as the
	// semaphores; any subchannel would do.
	SubHost Subchannel = 0
	// SubCompute is the compute engine's subchannel.
	SubCompute Subchannel = 1
	// SubCopy is the copy engine's subchannel.
	SubCopy Subchannel = 4
)

// Op is a header's SEC_OP.
type Op uint32

// The header kinds (NVC56F_DMA_SEC_OP_*).
const (
	// OpInc writes its data words to consecutive methods.
	OpInc Op = 1
	// OpNonInc writes all its data words to one method.
	OpNonInc Op = 3
	// OpImmd writes the 13 bits of data it holds to one method, with no
	// data word.
	OpImmd Op = 4
	// OpOneInc writes its first data word to the method and the rest to
	// the method after it.
	OpOneInc Op = 5
)

// MaxCount is the most data words one header announces (13 bits).
const MaxCount = 1<<13 - 1

// dmaNop is a word that does nothing (NVC56F_DMA_NOP).
const dmaNop = 0

// MaxImmediate is the largest value an immediate header holds.
const MaxImmediate = 1<<13 - 1

func header(op Op, sc Subchannel, method uint32, n uint32) uint32 {
	return uint32(op)<<29 | (n&MaxCount)<<16 | (uint32(sc)&7)<<13 | (method>>2)&0xfff
}

// Inc is the header of n data words to the consecutive methods from method
// (a byte offset) on subchannel sc. The header holds at most MaxCount words.
func Inc(sc Subchannel, method uint32, n int) uint32 {
	return header(OpInc, sc, method, uint32(n))
}

// NonInc is the header of n data words all to method.
func NonInc(sc Subchannel, method uint32, n int) uint32 {
	return header(OpNonInc, sc, method, uint32(n))
}

// Immd is the header that writes data, at most MaxImmediate, to method,
// with no data word.
func Immd(sc Subchannel, method uint32, data uint32) uint32 {
	return header(OpImmd, sc, method, data)
}

// OneInc is the header of n data words, the first to method and the rest
// to method+4.
func OneInc(sc Subchannel, method uint32, n int) uint32 {
	return header(OpOneInc, sc, method, uint32(n))
}

// Header is a decoded method header.
type Header struct {
	Op         Op
	Subchannel Subchannel
	// Method is the method's byte offset.
	Method uint32
	// Count is the number of data words, or for OpImmd the data.
	Count uint32
}

// DecodeHeader reads a header word.
func DecodeHeader(h uint32) Header {
	return Header{
		Op:         Op(h >> 29),
		Subchannel: Subchannel(h >> 13 & 7),
		Method:     (h & 0xfff) << 2,
		Count:      h >> 16 & MaxCount,
	}
}

// Write is one method write that a push buffer makes.
type Write struct {
	Subchannel Subchannel
	Method     uint32
	Value      uint32
}

// Decode reads a push buffer into the method writes it makes, in order:
// what a channel does with its words. It skips NOP words, and refuses a
// header of another kind and a buffer that ends inside a header's data.
func Decode(words []uint32) ([]Write, error) {
	var out []Write
	for i := 0; i < len(words); {
		h := DecodeHeader(words[i])
		i++
		if words[i-1] == dmaNop {
			continue
		}
		if h.Op == OpImmd {
			out = append(out, Write{h.Subchannel, h.Method, h.Count})
			continue
		}
		if h.Op != OpInc && h.Op != OpNonInc && h.Op != OpOneInc {
			return out, fmt.Errorf("push buffer: word %d: header %#08x of SEC_OP %d", i-1, words[i-1], h.Op)
		}
		if uint64(len(words)-i) < uint64(h.Count) {
			return out, fmt.Errorf("push buffer: header at word %d announces %d words, %d follow", i-1, h.Count, len(words)-i)
		}
		for k := uint32(0); k < h.Count; k++ {
			m := h.Method
			switch {
			case h.Op == OpInc:
				m += 4 * k
			case h.Op == OpOneInc && k > 0:
				m += 4
			}
			out = append(out, Write{h.Subchannel, m & 0x3ffc, words[i]})
			i++
		}
	}
	return out, nil
}

// SetObject binds the engine object of class class to subchannel sc
// (method 0x0 of every class).
func SetObject(b []uint32, sc Subchannel, class uint32) []uint32 {
	return append(b, Inc(sc, 0x0, 1), class&0xffff)
}

// SetObjectWords is the words SetObject appends.
const SetObjectWords = 2

// lo32 and hi32 split an address for a method pair that takes the upper
// bits in a field of width bits-32.
func lo32(a uint64) uint32 { return uint32(a) }

func hi32(a uint64, bits int) uint32 { return uint32(a>>32) & (1<<(bits-32) - 1) }
