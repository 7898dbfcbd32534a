package hw

// A launch descriptor (QMD, "queue meta data") tells the compute engine
// what a launch runs: its grid, its groups, its code, its constant banks,
// its shared and local memory, and the semaphores it releases as it
// completes. Its layout is a set of bit ranges MW(hi:lo) over the whole
// descriptor, as NVIDIA's class headers publish them: QMD V03_00 for
// Ampere and Ada (clc6c0qmd.h, clc7c0qmd.h, clc9c0qmd.h, 256 bytes) and
// QMD V04_00 for Hopper (clcbc0qmd.h, 384 bytes). QmdV03 and QmdV04 are
// those layouts; Qmd sets and reads a descriptor's fields through one.

// Field is a bit range MW(hi:lo) of a descriptor: Width bits from bit Lo,
// counted from bit 0 of the first word. The zero Field is absent: it sets
// nothing and reads 0.
type Field struct{ Lo, Width uint16 }

// MW is the field of bits hi down to lo, as the headers write MW(hi:lo).
func MW(hi, lo int) Field { return Field{Lo: uint16(lo), Width: uint16(hi - lo + 1)} }

// Hi is the field's highest bit.
func (f Field) Hi() int { return int(f.Lo) + int(f.Width) - 1 }

// Max is the largest value the field holds.
func (f Field) Max() uint64 {
	if f.Width >= 64 {
		return ^uint64(0)
	}
	return 1<<f.Width - 1
}

// Set writes the low Width bits of v into the field of q.
func (f Field) Set(q []uint32, v uint64) {
	v &= f.Max()
	for lo, w := uint(f.Lo), uint(f.Width); w > 0; {
		i, s := lo/32, lo%32
		n := min(w, 32-s)
		m := uint32(1<<n-1) << s
		q[i] = q[i]&^m | uint32(v)<<s&m
		v >>= n
		lo += n
		w -= n
	}
}

// Get reads the field of q.
func (f Field) Get(q []uint32) uint64 {
	var v uint64
	got := uint(0)
	for lo, w := uint(f.Lo), uint(f.Width); w > 0; {
		i, s := lo/32, lo%32
		n := min(w, 32-s)
		v |= uint64(q[i]>>s&(1<<n-1)) << got
		got += n
		lo += n
		w -= n
	}
	return v
}

// ReleaseSlot is the fields of one of a descriptor's release slots: a
// semaphore the compute engine writes as the launch completes.
type ReleaseSlot struct {
	Enable, StructureSize, MembarType, Payload64 Field
	AddressLower, AddressUpper                   Field
	PayloadLower, PayloadUpper                   Field
}

// ConstantBuffer is the fields of one of a descriptor's eight constant
// bank bindings. AddressShift is how far the address is shifted right
// into AddressLower:AddressUpper (0 on V03_00, 6 on V04_00).
type ConstantBuffer struct {
	Valid, Invalidate                Field
	AddressLower, AddressUpper, Size Field
	AddressShift                     uint8
	// Prefetch is CONSTANT_BUFFER_PREFETCH(i), where the version has it
	// (V04_00): the engine fetches the bank before the groups start.
	Prefetch Field
}

// QmdLayout is a descriptor version's layout: the field of each thing the
// driver sets.
type QmdLayout struct {
	// Name is the version's name, such as "V04_00".
	Name string
	// Words is the descriptor's size in 32-bit words.
	Words int
	// Major and Minor are the version the descriptor states.
	Major, Minor           uint32
	MajorField, MinorField Field

	QmdType                    Field
	ApiVisibleCallLimit        Field
	SamplerIndex               Field
	SassVersion                Field
	CwdMembarType              Field
	SmGlobalCachingEnable      Field
	InvalidateTextureHeader    Field
	InvalidateTextureSampler   Field
	InvalidateTextureData      Field
	InvalidateShaderData       Field
	InvalidateInstruction      Field
	InvalidateShaderConstant   Field
	Grid                       [3]Field
	Block                      [3]Field
	RegisterCount              Field
	BarrierCount               Field
	ProgramLower, ProgramUpper Field
	// ProgramShift is how far the program's address is shifted right.
	ProgramShift      uint8
	SharedMemorySize  Field
	MinSMConfigShared Field
	MaxSMConfigShared Field
	TargetSMConfig    Field
	LocalLowSize      Field
	LocalHighSize     Field
	ConstantBuffers   [8]ConstantBuffer
	Releases          [3]ReleaseSlot
	// The first dependent descriptor: enable, action, prefetch, and its
	// address shifted right by 8.
	DependentEnable, DependentAction, DependentPrefetch, DependentPointer Field
	PrefetchLower, PrefetchUpper, PrefetchSize, PrefetchType              Field
	// BankPrefetchMax is CONSTANT_BUFFER_PREFETCH_PRE_MAX_SIZE_SHIFTED8,
	// and CwdMembarTaskChasing CWD_MEMBAR_TASK_CHASING_ENABLE, where the
	// version has them (V04_00); a zero Field otherwise.
	BankPrefetchMax      Field
	CwdMembarTaskChasing Field
}

// Bytes is the descriptor's size in bytes.
func (l *QmdLayout) Bytes() int { return 4 * l.Words }

// AddressBits returns the width of the addresses of code and constant
// banks the descriptor holds: the narrowest of its program, program
// prefetch and constant bank addresses (49 on V03_00, 57 on V04_00).
func (l *QmdLayout) AddressBits() int {
	c := l.ConstantBuffers[0]
	return min(32+int(l.ProgramUpper.Width)+int(l.ProgramShift),
		32+int(l.PrefetchUpper.Width)+8,
		32+int(c.AddressUpper.Width)+int(c.AddressShift))
}

// MaxQmdWords is the words of the largest descriptor (V04_00).
const MaxQmdWords = 96

// QMD field values.
const (
	QmdTypeQueue           = 0 // QMD_TYPE_QUEUE
	QmdTypeGridCta         = 2 // QMD_TYPE_GRID_CTA
	CwdMembarL1None        = 0 // CWD_MEMBAR_TYPE_L1_NONE
	CwdMembarL1Sysmembar   = 1 // CWD_MEMBAR_TYPE_L1_SYSMEMBAR
	CwdMembarL1Membar      = 3 // CWD_MEMBAR_TYPE_L1_MEMBAR
	BankPrefetchPre        = 1 // CONSTANT_BUFFER_PREFETCH_PREFETCH_PRE
	ReleaseMembarSysmembar = 1 // RELEASE_MEMBAR_TYPE_FE_SYSMEMBAR
	ReleaseFourWords       = 0 // RELEASE_STRUCTURE_SIZE_SEMAPHORE_FOUR_WORDS
	ReleaseOneWord         = 1 // RELEASE_STRUCTURE_SIZE_SEMAPHORE_ONE_WORD
	DependentSchedule      = 1 // DEPENDENT_QMD_ACTION_QMD_SCHEDULE
)

// Qmd is a descriptor: its words, read and written through its layout. It
// is a small value over the caller's words, which may be the memory the
// compute engine reads the descriptor from; its setters allocate nothing.
type Qmd struct {
	L *QmdLayout
	W []uint32
}

// QmdOf is the descriptor of layout l in w, which holds at least l.Words
// words.
func QmdOf(l *QmdLayout, w []uint32) Qmd { return Qmd{L: l, W: w[:l.Words]} }

// Clear zeroes the descriptor.
func (q Qmd) Clear() { clear(q.W) }

// SetVersion states the layout's version.
func (q Qmd) SetVersion() {
	q.L.MajorField.Set(q.W, uint64(q.L.Major))
	q.L.MinorField.Set(q.W, uint64(q.L.Minor))
}

// Version is the version the descriptor states.
func (q Qmd) Version() (major, minor uint32) {
	return uint32(q.L.MajorField.Get(q.W)), uint32(q.L.MinorField.Get(q.W))
}

// SetGrid sets the grid's size in groups along x, y and z.
func (q Qmd) SetGrid(x, y, z uint32) {
	q.L.Grid[0].Set(q.W, uint64(x))
	q.L.Grid[1].Set(q.W, uint64(y))
	q.L.Grid[2].Set(q.W, uint64(z))
}

// Grid is the grid's size.
func (q Qmd) Grid() [3]uint32 {
	return [3]uint32{uint32(q.L.Grid[0].Get(q.W)), uint32(q.L.Grid[1].Get(q.W)), uint32(q.L.Grid[2].Get(q.W))}
}

// SetBlock sets a group's size in threads along x, y and z.
func (q Qmd) SetBlock(x, y, z uint32) {
	q.L.Block[0].Set(q.W, uint64(x))
	q.L.Block[1].Set(q.W, uint64(y))
	q.L.Block[2].Set(q.W, uint64(z))
}

// Block is a group's size.
func (q Qmd) Block() [3]uint32 {
	return [3]uint32{uint32(q.L.Block[0].Get(q.W)), uint32(q.L.Block[1].Get(q.W)), uint32(q.L.Block[2].Get(q.W))}
}

// SetRegisters sets the registers of a thread.
func (q Qmd) SetRegisters(n uint32) { q.L.RegisterCount.Set(q.W, uint64(n)) }

// Registers is the registers of a thread.
func (q Qmd) Registers() uint32 { return uint32(q.L.RegisterCount.Get(q.W)) }

// SetBarriers sets the named barriers a group uses.
func (q Qmd) SetBarriers(n uint32) { q.L.BarrierCount.Set(q.W, uint64(n)) }

// Barriers is the named barriers a group uses.
func (q Qmd) Barriers() uint32 { return uint32(q.L.BarrierCount.Get(q.W)) }

// SetProgram sets the address of the kernel's first instruction.
func (q Qmd) SetProgram(addr uint64) {
	a := addr >> q.L.ProgramShift
	q.L.ProgramLower.Set(q.W, a)
	q.L.ProgramUpper.Set(q.W, a>>32)
}

// Program is the address of the kernel's first instruction.
func (q Qmd) Program() uint64 {
	return (q.L.ProgramLower.Get(q.W) | q.L.ProgramUpper.Get(q.W)<<32) << q.L.ProgramShift
}

// SetPrefetch asks the engine to prefetch size bytes of code from addr as
// the launch starts (PROGRAM_PREFETCH_*: the address shifted by 8, the
// size in 256-byte units, at most 0x1ff).
func (q Qmd) SetPrefetch(addr uint64, size uint64) {
	a := addr >> 8
	q.L.PrefetchLower.Set(q.W, a)
	q.L.PrefetchUpper.Set(q.W, a>>32)
	q.L.PrefetchSize.Set(q.W, min((size+255)>>8, q.L.PrefetchSize.Max()))
	q.L.PrefetchType.Set(q.W, 0)
}

// Prefetch is the address and the 256-byte units of code prefetched.
func (q Qmd) Prefetch() (addr uint64, units uint64) {
	return (q.L.PrefetchLower.Get(q.W) | q.L.PrefetchUpper.Get(q.W)<<32) << 8, q.L.PrefetchSize.Get(q.W)
}

// SetShared sets a group's shared memory, in bytes (SHARED_MEMORY_SIZE),
// and the multiprocessor's shared memory configurations the launch may run
// in, as SharedConfig encodes them: the least, the most, and the one it
// asks for.
func (q Qmd) SetShared(bytes uint32, minConfig, maxConfig, target uint32) {
	q.L.SharedMemorySize.Set(q.W, uint64(bytes))
	q.L.MinSMConfigShared.Set(q.W, uint64(minConfig))
	q.L.MaxSMConfigShared.Set(q.W, uint64(maxConfig))
	q.L.TargetSMConfig.Set(q.W, uint64(target))
}

// Shared is a group's shared memory and the configurations.
func (q Qmd) Shared() (bytes, minConfig, maxConfig, target uint32) {
	return uint32(q.L.SharedMemorySize.Get(q.W)), uint32(q.L.MinSMConfigShared.Get(q.W)),
		uint32(q.L.MaxSMConfigShared.Get(q.W)), uint32(q.L.TargetSMConfig.Get(q.W))
}

// SetLocal sets a thread's local memory: low bytes at the bottom of its
// window and high bytes at its top, where nvcc's code keeps its stack.
func (q Qmd) SetLocal(low, high uint32) {
	q.L.LocalLowSize.Set(q.W, uint64(low))
	q.L.LocalHighSize.Set(q.W, uint64(high))
}

// Local is a thread's local memory, low and high.
func (q Qmd) Local() (low, high uint32) {
	return uint32(q.L.LocalLowSize.Get(q.W)), uint32(q.L.LocalHighSize.Get(q.W))
}

// SetConstantBuffer binds constant bank i to the size bytes at addr, and
// says whether the engine invalidates its cached copy of the bank as the
// launch starts. addr is aligned to 64 bytes (V04_00 holds it shifted by
// 6), size is rounded up to 16 bytes (the field holds it shifted by 4).
func (q Qmd) SetConstantBuffer(i int, addr uint64, size uint32, invalidate bool) {
	c := &q.L.ConstantBuffers[i]
	a := addr >> c.AddressShift
	c.Valid.Set(q.W, 1)
	c.AddressLower.Set(q.W, a)
	c.AddressUpper.Set(q.W, a>>32)
	c.Size.Set(q.W, uint64((size+15)>>4))
	c.Invalidate.Set(q.W, b2u(invalidate))
}

// SetConstantAddress moves constant bank i to addr, leaving the rest.
func (q Qmd) SetConstantAddress(i int, addr uint64) {
	c := &q.L.ConstantBuffers[i]
	a := addr >> c.AddressShift
	c.AddressLower.Set(q.W, a)
	c.AddressUpper.Set(q.W, a>>32)
}

// ConstantBuffer is bank i's binding: whether it is valid, its address,
// its size (a multiple of 16) and whether it is invalidated.
func (q Qmd) ConstantBuffer(i int) (valid bool, addr uint64, size uint32, invalidate bool) {
	c := &q.L.ConstantBuffers[i]
	addr = (c.AddressLower.Get(q.W) | c.AddressUpper.Get(q.W)<<32) << c.AddressShift
	return c.Valid.Get(q.W) != 0, addr, uint32(c.Size.Get(q.W)) << 4, c.Invalidate.Get(q.W) != 0
}

// SetRelease makes release slot i write the 64-bit value into the word at
// addr as the launch completes, after a system-wide memory barrier (one-
// word structure, 64-bit payload).
func (q Qmd) SetRelease(i int, addr, value uint64) {
	r := &q.L.Releases[i]
	r.Enable.Set(q.W, 1)
	r.StructureSize.Set(q.W, ReleaseOneWord)
	r.MembarType.Set(q.W, ReleaseMembarSysmembar)
	r.Payload64.Set(q.W, 1)
	r.AddressLower.Set(q.W, addr)
	r.AddressUpper.Set(q.W, addr>>32)
	r.PayloadLower.Set(q.W, value)
	r.PayloadUpper.Set(q.W, value>>32)
}

// ClearRelease disables release slot i.
func (q Qmd) ClearRelease(i int) { q.L.Releases[i].Enable.Set(q.W, 0) }

// Release is slot i's release: whether it is enabled, whether its payload
// is 64-bit, its address and its value.
func (q Qmd) Release(i int) (enabled, payload64 bool, addr, value uint64) {
	r := &q.L.Releases[i]
	return r.Enable.Get(q.W) != 0, r.Payload64.Get(q.W) != 0,
		r.AddressLower.Get(q.W) | r.AddressUpper.Get(q.W)<<32,
		r.PayloadLower.Get(q.W) | r.PayloadUpper.Get(q.W)<<32
}

// SetDependent chains the descriptor at next to this one: the engine
// schedules it as this launch completes (dependent descriptor 0, action
// SCHEDULE), and prefetches it if prefetch is set. next is aligned to 256
// bytes and lies below 2^40: the pointer holds it shifted by 8 in 32 bits.
//
// Where the version chases membars task by task (V04_00), the launch's
// groups then end with a membar of the GPU (CWD_MEMBAR_TYPE L1_MEMBAR,
// CWD_MEMBAR_TASK_CHASING_ENABLE) in place of the system's: the dependent
// is what reads their writes next, on the GPU, and the chain's last
// launch, which has no dependent, keeps the system's membar before the
// value's release. On the H200 this took 1,000 linked launches from 585 to
// 476 ns each (either change alone: 585).
func (q Qmd) SetDependent(next uint64, prefetch bool) {
	q.L.DependentEnable.Set(q.W, 1)
	q.L.DependentAction.Set(q.W, DependentSchedule)
	q.L.DependentPrefetch.Set(q.W, b2u(prefetch))
	q.L.DependentPointer.Set(q.W, next>>8)
	if q.L.CwdMembarTaskChasing.Width != 0 {
		q.L.CwdMembarType.Set(q.W, CwdMembarL1Membar)
		q.L.CwdMembarTaskChasing.Set(q.W, 1)
	}
}

// ClearDependent unchains the dependent descriptor, and gives the launch
// the system's membar back.
func (q Qmd) ClearDependent() {
	q.L.DependentEnable.Set(q.W, 0)
	if q.L.CwdMembarTaskChasing.Width != 0 {
		q.L.CwdMembarType.Set(q.W, CwdMembarL1Sysmembar)
		q.L.CwdMembarTaskChasing.Set(q.W, 0)
	}
}

// SetBankPrefetch has the engine fetch constant bank i, of n bytes, before
// the launch's groups start (CONSTANT_BUFFER_PREFETCH PREFETCH_PRE), where
// the version has it (V04_00); elsewhere it does nothing. The banks share
// one bound of the bytes prefetched
// (CONSTANT_BUFFER_PREFETCH_PRE_MAX_SIZE_SHIFTED8, at most 16,128 bytes),
// which grows to cover n. On the H200 a value of one launch took 1,613 ns
// of the GPU against 1,764 without it, and a linked launch 585 against
// 736.
func (q Qmd) SetBankPrefetch(i int, n uint32) {
	c := q.L.ConstantBuffers[i]
	if c.Prefetch.Width == 0 {
		return
	}
	c.Prefetch.Set(q.W, BankPrefetchPre)
	m := q.L.BankPrefetchMax
	m.Set(q.W, min(max(m.Get(q.W), (uint64(n)+255)>>8), m.Max()))
}

// BankPrefetch reports whether bank i is prefetched before the groups
// start, and the banks' bound of the bytes prefetched.
func (q Qmd) BankPrefetch(i int) (bool, uint32) {
	c := q.L.ConstantBuffers[i]
	if c.Prefetch.Width == 0 {
		return false, 0
	}
	return c.Prefetch.Get(q.W) == BankPrefetchPre, uint32(q.L.BankPrefetchMax.Get(q.W)) << 8
}

// Dependent is the chained descriptor's address and whether it is enabled.
func (q Qmd) Dependent() (next uint64, enabled bool) {
	return q.L.DependentPointer.Get(q.W) << 8, q.L.DependentEnable.Get(q.W) != 0
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
