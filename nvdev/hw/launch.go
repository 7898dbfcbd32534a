package hw

import (
	"fmt"
)

// A launch of a kernel is a descriptor and a constant bank 0, stamped from
// the kernel's Launch template: the template holds everything that is the
// same for every launch of the kernel where its image lies (the code and
// constant bank addresses, registers, barriers, local memory, the cache
// invalidations), so that a launch writes only its grid, its groups, its
// dynamic shared memory, its parameters, and where its constant bank 0
// lies.
//
// Constant bank 0 holds the driver's words, then the kernel's parameters
// at the offset nvcc chose (0x160 on sm_8x and 0x210 on sm_90, more for
// kernels of large parameters). The driver's words a launch sets are
// blockDim at 0x0, gridDim at 0xc, the shared window at 0x18, the local
// window at 0x20 and the initial stack pointer at 0x28; the rest stays 0,
// such as the global memory descriptor (0x118 on sm_8x, 0x208 on sm_90),
// for which 0 addresses memory by its raw address.

// Offsets of the driver's words in constant bank 0.
const (
	Bank0BlockDim     = 0x00 // blockDim.x, .y, .z
	Bank0GridDim      = 0x0c // gridDim.x, .y, .z
	Bank0SharedWindow = 0x18 // the shared window's address, 64 bits
	Bank0LocalWindow  = 0x20 // the local window's address, 64 bits
	Bank0StackPointer = 0x28 // a thread's initial stack pointer
	bank0DriverWords  = 0x30
)

// MaxBankBytes is the most bytes of a constant bank, bank 0 included.
const MaxBankBytes = 64 << 10

// MaxBarriers is the most named barriers a group uses (bar.sync 0 to 15).
const MaxBarriers = 16

// Windows is where the compute engine's windows onto shared and local
// memory lie in the GPU's address space (SetWindows).
type Windows struct{ Shared, Local uint64 }

// Launch is the template the launches of one kernel are stamped from. It
// is read-only once made: any goroutine may stamp from it.
type Launch struct {
	Gen    *Generation
	Kernel *Kernel
	// Code is the address of the kernel's first instruction.
	Code uint64
	// MaxThreads is the most threads of a group: the multiprocessor's, the
	// kernel's launch bounds', and what its registers leave.
	MaxThreads int
	// DynamicShared is the most dynamic shared memory of a group, a
	// multiple of 128 bytes.
	DynamicShared int
	// Bank0Bytes is the bytes of constant bank 0 a launch stamps, a
	// multiple of 16.
	Bank0Bytes int
	// Local is the local memory of a thread, in bytes: its stack and the
	// StackReserve above it. The compute channel's local memory must serve
	// it (Gpu.LocalBytes).
	Local int

	staticShared int
	qmd          [MaxQmdWords]uint32
	bank0        []byte
}

// MakeLaunch makes the template of the launches of kernel k, on the GPU of
// generation g, where k's image lies at image (aligned to its cubin's
// Align) and the compute channel's windows lie at w. It refuses a kernel
// the generation does not run or that takes more than a launch can: a
// constant bank 0 past MaxBankBytes, parameters outside its constant bank
// 0 (which a launch would cut off), more shared memory than a group has,
// a constant bank the descriptor cannot bind, a cluster shape, more than
// MaxBarriers barriers, or a stack past a thread's 16 MiB local window.
// It returns an error wrapping ErrAddress where the code or a constant
// bank lies past the addresses the descriptor holds (2^49 on QMD V03_00,
// 2^57 on V04_00).
func MakeLaunch(g *Generation, k *Kernel, image uint64, w Windows) (*Launch, error) {
	if !g.Runs(k.SM) {
		return nil, fmt.Errorf("%w: kernel %s for sm_%d on %s", ErrArch, k.Name, k.SM, g.Arch)
	}
	if image%256 != 0 {
		return nil, fmt.Errorf("%w: image of %s at %#x, not aligned to 256 bytes", ErrAddress, k.Name, image)
	}
	reach := uint64(1) << g.Qmd.AddressBits()
	if image >= reach || k.Code >= reach-image {
		return nil, fmt.Errorf("%w: image of %s at %#x, code at %#x in it, past the descriptor's 2^%d",
			ErrAddress, k.Name, image, k.Code, g.Qmd.AddressBits())
	}
	l := &Launch{Gen: g, Kernel: k, Code: image + k.Code}
	bank0 := max(k.Bank0Bytes, g.ParamsOffset, bank0DriverWords)
	l.Bank0Bytes = (bank0 + 15) &^ 15
	if l.Bank0Bytes > g.MaxBankBytes {
		return nil, fmt.Errorf("kernel %s: constant bank 0 of %d bytes, more than the %d a bank holds", k.Name, bank0, g.MaxBankBytes)
	}
	if k.ParamOffset < 0 || k.ParamBytes < 0 || k.ParamOffset > k.Bank0Bytes || k.ParamBytes > k.Bank0Bytes-k.ParamOffset {
		return nil, fmt.Errorf("kernel %s: parameters at %#x of %d bytes, outside its constant bank 0 of %d bytes",
			k.Name, k.ParamOffset, k.ParamBytes, k.Bank0Bytes)
	}
	for _, b := range k.Banks {
		if b.Index >= len(g.Qmd.ConstantBuffers) {
			return nil, fmt.Errorf("kernel %s: constant bank %d, past the descriptor's %d", k.Name, b.Index, len(g.Qmd.ConstantBuffers))
		}
		if int(b.Size) > g.MaxBankBytes {
			return nil, fmt.Errorf("kernel %s: constant bank %d of %d bytes, more than the %d a bank holds", k.Name, b.Index, b.Size, g.MaxBankBytes)
		}
		if b.Offset >= reach-image {
			return nil, fmt.Errorf("%w: kernel %s: constant bank %d at %#x in an image at %#x, past the descriptor's 2^%d",
				ErrAddress, k.Name, b.Index, b.Offset, image, g.Qmd.AddressBits())
		}
	}
	if k.ClusterDims != [3]int{} || k.ExplicitCluster {
		return nil, fmt.Errorf("kernel %s: launches of clusters of groups are not supported", k.Name)
	}
	if k.Registers < 0 || k.Registers > g.MaxRegisters {
		return nil, fmt.Errorf("kernel %s: %d registers, more than a thread has", k.Name, k.Registers)
	}
	if k.Barriers < 0 || k.Barriers > MaxBarriers {
		return nil, fmt.Errorf("kernel %s: %d barriers, more than the %d a group has", k.Name, k.Barriers, MaxBarriers)
	}
	if k.Shared < 0 {
		return nil, fmt.Errorf("kernel %s: %d bytes of shared memory", k.Name, k.Shared)
	}
	l.staticShared = k.Shared
	if !g.ReservedInCubin {
		l.staticShared += g.ReservedShared
	}
	if l.staticShared > g.MaxShared() {
		return nil, fmt.Errorf("kernel %s: %d bytes of shared memory, more than the %d a group has", k.Name, l.staticShared, g.MaxShared())
	}
	l.DynamicShared = (g.MaxShared() - l.staticShared) &^ 127
	l.MaxThreads = maxThreads(g, k)
	l.Local = (k.Stack() + int(g.StackReserve) + 15) &^ 15
	if k.Stack() < 0 || uint64(l.Local) > g.Qmd.LocalHighSize.Max() {
		return nil, fmt.Errorf("kernel %s: a stack of %d bytes a thread, more than its %d bytes of local memory hold",
			k.Name, k.Stack(), g.Qmd.LocalHighSize.Max()+1-uint64(g.StackReserve))
	}

	q := QmdOf(g.Qmd, l.qmd[:])
	q.SetVersion()
	g.Qmd.QmdType.Set(q.W, uint64(g.QmdType))
	g.Qmd.ApiVisibleCallLimit.Set(q.W, 1) // NO_CHECK
	g.Qmd.SassVersion.Set(q.W, uint64(SassVersion(k.SM)))
	g.Qmd.CwdMembarType.Set(q.W, CwdMembarL1Sysmembar)
	g.Qmd.SmGlobalCachingEnable.Set(q.W, 1)
	for _, f := range []Field{g.Qmd.InvalidateTextureHeader, g.Qmd.InvalidateTextureSampler,
		g.Qmd.InvalidateTextureData, g.Qmd.InvalidateShaderData} {
		f.Set(q.W, 1)
	}
	q.SetRegisters(uint32(k.Registers))
	q.SetBarriers(uint32(k.Barriers))
	q.SetProgram(l.Code)
	q.SetPrefetch(l.Code, k.CodeBytes)
	q.SetLocal(0, uint32(l.Local))
	q.SetConstantBuffer(0, 0, uint32(l.Bank0Bytes), true)
	q.SetBankPrefetch(0, uint32(l.Bank0Bytes))
	for _, b := range k.Banks {
		q.SetConstantBuffer(b.Index, image+b.Offset, b.Size, false)
	}
	l.stampShared(q, 0)

	l.bank0 = make([]byte, l.Bank0Bytes)
	copy(l.bank0, k.Bank0)
	le.PutUint64(l.bank0[Bank0SharedWindow:], w.Shared)
	le.PutUint64(l.bank0[Bank0LocalWindow:], w.Local)
	le.PutUint32(l.bank0[Bank0StackPointer:], g.StackTop)
	return l, nil
}

// maxThreads is the most threads of a group of k: at most g.MaxThreads,
// its launch bounds, and the warps whose registers the register file
// holds.
func maxThreads(g *Generation, k *Kernel) int {
	n := g.MaxThreads
	perWarp := (max(k.Registers, 1)*32 + g.RegisterUnit - 1) / g.RegisterUnit * g.RegisterUnit
	n = min(n, g.Registers/perWarp*32)
	if t := k.MaxThreadsAttr; t != [3]int{} {
		// Each axis is bounded by n first, so that the product of the
		// three cannot overflow: an axis of more than n bounds nothing.
		axis := func(v int) int { return min(max(v, 1), n) }
		n = min(n, axis(t[0])*axis(t[1])*axis(t[2]))
	}
	return n
}

// Bank0Template is the constant bank 0 a launch starts from: the kernel's
// initial bytes with the windows and the stack pointer set.
func (l *Launch) Bank0Template() []byte { return append([]byte(nil), l.bank0...) }

// QmdTemplate is the descriptor a launch starts from.
func (l *Launch) QmdTemplate() []uint32 { return append([]uint32(nil), l.qmd[:l.Gen.Qmd.Words]...) }

// Check is the reason a launch of grid groups of block threads with dyn
// bytes of dynamic shared memory cannot run, or "": the generation's
// limits (Generation.CheckSize), MaxThreads, and DynamicShared against dyn
// rounded up to 128 bytes. It allocates nothing.
func (l *Launch) Check(grid, block [3]uint32, dyn uint32) string {
	if why := l.Gen.CheckSize(grid, block); why != "" {
		return why
	}
	if uint64(block[0])*uint64(block[1])*uint64(block[2]) > uint64(l.MaxThreads) {
		return "group has more threads than the kernel's registers or bounds allow"
	}
	if (uint64(dyn)+127)&^127 > uint64(l.DynamicShared) {
		return "dynamic shared memory exceeds what a group has"
	}
	return ""
}

// stampShared sets the descriptor's shared memory for dyn bytes of
// dynamic shared memory: the group's total, rounded up to 256 bytes, and
// the smallest configuration that holds it; a launch with dynamic shared
// memory asks for the configuration of the most shared memory.
func (l *Launch) stampShared(q Qmd, dyn uint32) {
	total := (uint32(l.staticShared) + (dyn+127)&^127 + 255) &^ 255
	g := l.Gen
	most, _ := g.SharedConfig(g.MaxShared())
	least, ok := g.SharedConfig(int(total))
	if !ok {
		least = most
	}
	target := least
	if dyn > 0 {
		target = most
	}
	q.SetShared(total, least, most, target)
}

// Stamp writes a launch into qmd, the descriptor's words (at least
// Gen.Qmd.Words), and bank0, its constant bank 0 (at least Bank0Bytes),
// which the compute engine reads at bank0Addr, aligned to 256 bytes: grid
// groups of block threads with dyn bytes of dynamic shared memory, and
// params, of which the bytes past the kernel's parameters are left out.
// It checks nothing (Check does) and allocates nothing.
func (l *Launch) Stamp(qmd []uint32, bank0 []byte, bank0Addr uint64, grid, block [3]uint32, dyn uint32, params []byte) {
	words := l.Gen.Qmd.Words
	copy(qmd[:words], l.qmd[:words])
	q := Qmd{L: l.Gen.Qmd, W: qmd[:words]}
	q.SetGrid(grid[0], grid[1], grid[2])
	q.SetBlock(block[0], block[1], block[2])
	l.stampShared(q, dyn)
	q.SetConstantAddress(0, bank0Addr)

	b := bank0[:l.Bank0Bytes]
	copy(b, l.bank0)
	for i := range 3 {
		le.PutUint32(b[Bank0BlockDim+4*i:], block[i])
		le.PutUint32(b[Bank0GridDim+4*i:], grid[i])
	}
	n := min(len(params), l.Kernel.ParamBytes)
	copy(b[l.Kernel.ParamOffset:], params[:n])
}
