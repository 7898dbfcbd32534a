package rig

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/rig-go/rig/device"
)

// Kernel runs fn over the groups and threads a run sets, on "COMPUTE:0",
// with as many parameter bytes as fn's image states. Each ref writes a
// buffer's address into a parameter (ReadArg, WriteArg, ReadWriteArg) or
// at a byte (Read, Write, ReadWrite) and states how fn uses the buffer;
// Run.SetUint32 and its siblings set the other parameters by index.
func Kernel(fn *Function, refs ...Ref) Part {
	p := Launch(fn, 0, refs...)
	p.auto = true
	return p
}

// ReadArg is a ref to buffer buf that the part reads, its address in
// parameter k of the launch's function.
func ReadArg(buf, k int) Ref { return argRef(buf, k, Reads) }

// WriteArg is a ref to buffer buf that the part writes, its address in
// parameter k of the launch's function.
func WriteArg(buf, k int) Ref { return argRef(buf, k, Writes) }

// ReadWriteArg is a ref to buffer buf that the part reads and writes, its
// address in parameter k of the launch's function.
func ReadWriteArg(buf, k int) Ref { return argRef(buf, k, ReadsWrites) }

// argRef is the ref of ReadArg, WriteArg and ReadWriteArg. Its arg is
// k+1; -1 for a negative k, and argPastAll for math.MaxInt, whose k+1
// would wrap.
func argRef(buf, k int, a Access) Ref {
	arg := k + 1
	switch {
	case k < 0:
		arg = -1
	case k == math.MaxInt:
		arg = argPastAll
	}
	return Ref{Buf: buf, At: 0, Access: a, arg: arg}
}

// argPastAll is the arg of a ref to parameter math.MaxInt, past every
// function's parameters.
const argPastAll = math.MinInt

// Layout is where each of the function's parameters lies in its parameter
// bytes, in the order of its signature, or nil where its image does not
// state it, or for a nil or zero Function. The caller must not change it.
func (f *Function) Layout() []device.Param { return f.e().Layout }

// resolveArgs sets part i's parameter count where Kernel made it, and turns
// its refs by parameter into refs by byte. It copies the refs it changes.
func (p *Part) resolveArgs() error {
	e := p.fn.entry
	if p.auto {
		p.params = e.Params
	}
	cloned := false
	for j, r := range p.refs {
		if r.arg == 0 {
			continue
		}
		k := r.arg - 1
		switch {
		case r.arg == argPastAll:
			k = math.MaxInt
		case r.arg < 0:
			return fmt.Errorf("a ref to buffer %d in a negative parameter of %q", r.Buf, e.Name)
		}
		if e.Layout == nil {
			return fmt.Errorf("the image of %q states no layout of its parameters: give the address's byte instead (Read, Write, ReadWrite)", e.Name)
		}
		if k >= len(e.Layout) {
			return fmt.Errorf("a ref to buffer %d in parameter %d of %q, which has %d parameters", r.Buf, k, e.Name, len(e.Layout))
		}
		if pa := e.Layout[k]; pa.Size != 8 {
			return fmt.Errorf("parameter %d of %q is %d bytes, and a buffer's address 8", k, e.Name, pa.Size)
		}
		if !cloned {
			p.refs = slices.Clone(p.refs)
			cloned = true
		}
		p.refs[j].At, p.refs[j].arg = e.Layout[k].Offset, 0
	}
	return nil
}

// SetUint32 sets parameter k of launch part i to v, little-endian. Like
// the other setters, it checks v's size against the parameter's as the
// function's image states it; an error (a part or parameter that does not
// exist, or sizes that differ, named with the function) is returned by
// Submit.
func (r *Run) SetUint32(i, k int, v uint32) {
	if b := r.param(i, k, 4); b != nil {
		binary.LittleEndian.PutUint32(b, v)
	}
}

// SetInt32 sets parameter k of launch part i to v (see SetUint32).
func (r *Run) SetInt32(i, k int, v int32) { r.SetUint32(i, k, uint32(v)) }

// SetFloat32 sets parameter k of launch part i to v (see SetUint32).
func (r *Run) SetFloat32(i, k int, v float32) { r.SetUint32(i, k, math.Float32bits(v)) }

// SetUint64 sets parameter k of launch part i to v (see SetUint32).
func (r *Run) SetUint64(i, k int, v uint64) {
	if b := r.param(i, k, 8); b != nil {
		binary.LittleEndian.PutUint64(b, v)
	}
}

// SetInt64 sets parameter k of launch part i to v (see SetUint32).
func (r *Run) SetInt64(i, k int, v int64) { r.SetUint64(i, k, uint64(v)) }

// SetFloat64 sets parameter k of launch part i to v (see SetUint32).
func (r *Run) SetFloat64(i, k int, v float64) { r.SetUint64(i, k, math.Float64bits(v)) }

// SetBytes sets parameter k of launch part i to b, which must be as long as
// the parameter (a struct passed by value, say; see SetUint32).
func (r *Run) SetBytes(i, k int, b []byte) {
	if dst := r.param(i, k, len(b)); dst != nil {
		copy(dst, b)
	}
}

// param returns the bytes of parameter k of launch part i where they are
// size bytes long, and records the error for Submit otherwise.
func (r *Run) param(i, k, size int) []byte {
	if i < 0 || i >= len(r.sub.Parts) {
		r.fail(fmt.Errorf("rig: parameter %d of part %d: the submission has %d parts: %w", k, i, len(r.sub.Parts), ErrInvalid))
		return nil
	}
	e := r.sub.Parts[i].Entry
	if r.sub.Parts[i].Kind != device.Launch || e == nil {
		r.fail(fmt.Errorf("rig: parameter %d of part %d: the part is a %s, not a launch: %w", k, i, r.sub.Parts[i].Kind, ErrInvalid))
		return nil
	}
	if e.Layout == nil {
		r.fail(fmt.Errorf("rig: parameter %d of part %d: the image of %q states no layout of its parameters: write Params(%d) instead: %w", k, i, e.Name, i, ErrInvalid))
		return nil
	}
	if k < 0 || k >= len(e.Layout) {
		r.fail(fmt.Errorf("rig: parameter %d of part %d: %q has %d parameters: %w", k, i, e.Name, len(e.Layout), ErrInvalid))
		return nil
	}
	pa := e.Layout[k]
	if pa.Size != size {
		r.fail(fmt.Errorf("rig: parameter %d of %q (part %d) is %d bytes, and the value set is %d: %w", k, e.Name, i, pa.Size, size, ErrInvalid))
		return nil
	}
	b := r.params[i]
	if pa.Offset > len(b)-size {
		r.fail(fmt.Errorf("rig: parameter %d of %q (part %d) lies at bytes %d to %d, past the part's %d parameter bytes: %w", k, e.Name, i, pa.Offset, pa.Offset+size, len(b), ErrInvalid))
		return nil
	}
	return b[pa.Offset : pa.Offset+size]
}

// fail records the run's first error, which Submit returns.
func (r *Run) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}
