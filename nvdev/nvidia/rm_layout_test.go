package nvidia

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/rig-go/rig/device"
)

func TestIoctlNumbers(t *testing.T) {
	for _, c := range []struct {
		name string
		got  uintptr
		want uintptr
	}{
		// _IOWR('F', nr, size) as the C headers compute it.
		{"RM_ALLOC (NVOS64)", escape(escRMAlloc, unsafe.Sizeof(rmAllocParams{})), 0xc030462b},
		{"RM_CONTROL", escape(escRMControl, unsafe.Sizeof(rmControlParams{})), 0xc020462a},
		{"RM_FREE", escape(escRMFree, unsafe.Sizeof(rmFreeParams{})), 0xc0104629},
		{"RM_ALLOC_MEMORY", escape(escRMAllocMemory, unsafe.Sizeof(rmAllocMemoryWithFD{})), 0xc0384627},
		{"RM_MAP_MEMORY", escape(escRMMapMemory, unsafe.Sizeof(rmMapMemoryWithFD{})), 0xc038464e},
		{"RM_MAP_MEMORY_DMA", escape(escRMMapMemoryDMA, unsafe.Sizeof(rmMapMemoryDMAParams{})), 0xc0404657},
		{"REGISTER_FD", escape(escRegisterFD, unsafe.Sizeof(registerFDParams{})), 0xc00446c9},
		{"CARD_INFO x32", escape(escCardInfo, maxDevices*unsafe.Sizeof(cardInfo{})), 0xc90046c8},
		{"WAIT_OPEN_COMPLETE", escape(escWaitOpenComplete, unsafe.Sizeof(waitOpenCompleteParams{})), 0xc00846da},
		{"EXPORT_TO_DMABUF_FD", escape(escExportToDMABufFD, unsafe.Sizeof(exportDMABufParams{})), 0xca3046d9},
	} {
		if c.got != c.want {
			t.Errorf("%s: 0x%x, want 0x%x", c.name, c.got, c.want)
		}
	}
	if uvmInitialize != 0x30000001 || uvmMMInitialize != 75 || uvmRegisterGPU != 37 ||
		uvmRegisterGPUVASpace != 25 || uvmRegisterChannel != 27 || uvmCreateExternalRange != 73 ||
		uvmMapExternalAlloc != 33 || uvmFree != 34 {
		t.Error("UVM ioctl numbers differ from uvm_ioctl.h")
	}
	defer func() {
		if recover() == nil {
			t.Error("iowr of a block larger than its number holds did not panic")
		}
	}()
	escape(escRMControl, 1<<14)
}

func TestStatusNames(t *testing.T) {
	for status, want := range map[uint32]string{
		0x00:      "NV_OK",
		0x1f:      "NV_ERR_INVALID_ARGUMENT",
		0x33:      "NV_ERR_INVALID_OBJECT_HANDLE",
		0x36:      "NV_ERR_INVALID_OBJECT_PARENT",
		0x3a:      "NV_ERR_INVALID_PARAM_STRUCT",
		0x51:      "NV_ERR_NO_MEMORY",
		0x56:      "NV_ERR_NOT_SUPPORTED",
		0x60:      "NV_ERR_RC_ERROR",
		0x1a:      "NV_ERR_INSUFFICIENT_RESOURCES",
		0x0f:      "NV_ERR_GPU_IS_LOST",
		0xffff:    "NV_ERR_GENERIC",
		0x7777777: "NV_STATUS(0x7777777)",
	} {
		if got := StatusName(status); got != want {
			t.Errorf("StatusName(0x%x) = %q, want %q", status, got, want)
		}
	}
	if len(statusNames) < 140 {
		t.Errorf("only %d status names", len(statusNames))
	}
}

// Each Status constant is the value nvstatuscodes.h gives the name it
// carries.
func TestStatusConstants(t *testing.T) {
	for _, c := range []struct {
		status uint32
		name   string
	}{
		{StatusOK, "NV_OK"},
		{StatusGPUIsLost, "NV_ERR_GPU_IS_LOST"},
		{StatusGPUInFullchipReset, "NV_ERR_GPU_IN_FULLCHIP_RESET"},
		{StatusInsufficientResources, "NV_ERR_INSUFFICIENT_RESOURCES"},
		{StatusInvalidArgument, "NV_ERR_INVALID_ARGUMENT"},
		{StatusInvalidObjectHandle, "NV_ERR_INVALID_OBJECT_HANDLE"},
		{StatusInvalidObjectParent, "NV_ERR_INVALID_OBJECT_PARENT"},
		{StatusInvalidParamStruct, "NV_ERR_INVALID_PARAM_STRUCT"},
		{StatusNoMemory, "NV_ERR_NO_MEMORY"},
		{StatusNotSupported, "NV_ERR_NOT_SUPPORTED"},
		{StatusRCError, "NV_ERR_RC_ERROR"},
		{StatusResetRequired, "NV_ERR_RESET_REQUIRED"},
		{StatusGPUNotFullPower, "NV_ERR_GPU_NOT_FULL_POWER"},
		{StatusGPUInDebugMode, "NV_ERR_GPU_IN_DEBUG_MODE"},
		{StatusObjectNotFound, "NV_ERR_OBJECT_NOT_FOUND"},
		{StatusInsufficientPerms, "NV_ERR_INSUFFICIENT_PERMISSIONS"},
		{statusInvalidDevice, "NV_ERR_INVALID_DEVICE"},
	} {
		if got := StatusName(c.status); got != c.name {
			t.Errorf("0x%x is %s, want %s", c.status, got, c.name)
		}
	}
}

func TestRMErrorKinds(t *testing.T) {
	for _, c := range []struct {
		e       RMError
		lacking bool
		fatal   bool
		text    string
	}{
		{RMError{Call: "RM_ALLOC", Status: StatusNoMemory}, true, false, "nvidia: RM_ALLOC: NV_ERR_NO_MEMORY (0x51)"},
		{RMError{Call: "RM_ALLOC", Status: StatusInsufficientResources}, true, false, "NV_ERR_INSUFFICIENT_RESOURCES (0x1a)"},
		{RMError{Call: "mmap", Errno: syscall.ENOMEM}, true, false, "nvidia: mmap: ioctl: cannot allocate memory"},
		{RMError{Call: "RM_CONTROL", Status: StatusInvalidArgument}, false, false, "NV_ERR_INVALID_ARGUMENT (0x1f)"},
		{RMError{Call: "RM_CONTROL", Status: StatusGPUIsLost}, false, true, "NV_ERR_GPU_IS_LOST"},
		{RMError{Call: "RM_CONTROL", Errno: syscall.EIO}, false, true, "input/output error"},
		{RMError{Call: "RM_CONTROL", Errno: syscall.EINVAL}, false, false, "invalid argument"},
	} {
		e := &c.e
		if e.Lacking() != c.lacking || errors.Is(e, ErrLacking) != c.lacking || errors.Is(e, ErrRefused) == c.lacking {
			t.Errorf("%v: lacking %v, want %v", e, e.Lacking(), c.lacking)
		}
		if e.Fatal() != c.fatal {
			t.Errorf("%v: fatal %v, want %v", e, e.Fatal(), c.fatal)
		}
		if !strings.Contains(e.Error(), c.text) {
			t.Errorf("%q lacks %q", e.Error(), c.text)
		}
		if got, ok := AsRMError(errors.Join(errors.New("context"), e)); !ok || got != e {
			t.Errorf("AsRMError lost %v", e)
		}
	}
}

func TestGenerations(t *testing.T) {
	// The classes the RM 580.159.04 lists for our H200.
	h200 := []uint32{0x0, 0x1, 0x2, 0x4, 0x5, 0xf, 0x20, 0x3e, 0x3f, 0x40, 0x41, 0x42, 0x50, 0x60, 0x70, 0x71,
		0x76, 0x78, 0x79, 0x7d, 0x7e, 0x80, 0x81, 0x82, 0x83, 0x90, 0x92, 0xb1, 0xc2, 0xda, 0xdb, 0xde, 0xe0,
		0xf1, 0xf3, 0xf8, 0xf9, 0xfb, 0xfd, 0xfe, 0x100, 0x101, 0x2080, 0x2081, 0x2082, 0x208f, 0x30f1, 0x402c,
		0x503b, 0x503c, 0x5080, 0x50a0, 0x83de, 0x844c, 0x900e, 0x9010, 0x902d, 0x9067, 0x906f, 0x9074, 0x9096,
		0x90cc, 0x90cd, 0x90ce, 0x90e6, 0x90e7, 0x90f1, 0xa06c, 0xa080, 0xa081, 0xa084, 0xa0bc, 0xa0bd, 0xa140,
		0xb1cc, 0xb2cc, 0xb8b0, 0xb8d1, 0xb8fa, 0xc076, 0xc361, 0xc365, 0xc369, 0xc36f, 0xc461, 0xc46f, 0xc561,
		0xc56f, 0xc574, 0xc637, 0xc638, 0xc639, 0xc640, 0xc661, 0xc763, 0xc863, 0xc86f, 0xc8b5, 0xcb33, 0xcb97,
		0xcba2, 0xcbc0, 0xcbca}
	g, err := GenerationOf(h200)
	if err != nil || g.Name != "Hopper" || g.Compute != 0xcbc0 || g.Copy != 0xc8b5 || g.Channel != 0xc86f || g.Usermode != 0xc661 {
		t.Errorf("H200: %+v, %v", g, err)
	}
	ada := []uint32{0x80, 0x2080, 0xc9c0, 0xc7b5, 0xc56f, 0xc561, 0xc461}
	if g, err := GenerationOf(ada); err != nil || g.Name != "Ada" {
		t.Errorf("Ada: %+v, %v", g, err)
	}
	ga102 := []uint32{0xc7c0, 0xc7b5, 0xc56f, 0xc561}
	if g, err := GenerationOf(ga102); err != nil || g.Name != "Ampere GA10x" {
		t.Errorf("GA102: %+v, %v", g, err)
	}
	if _, err := GenerationOf([]uint32{0xcbc0, 0xc86f, 0xc661}); err == nil || !strings.Contains(err.Error(), "HOPPER_DMA_COPY_A") {
		t.Errorf("Hopper without its copy class: %v", err)
	}
	if _, err := GenerationOf([]uint32{0xc5c0}); err == nil {
		t.Error("Turing was taken for a known generation")
	}
}

func TestArch(t *testing.T) {
	for v, want := range map[uint32]string{0x900: "sm_90", 0x809: "sm_89", 0x806: "sm_86", 0x800: "sm_80", 0x807: "sm_87"} {
		if got := (GPU{SMVersion: v}).Arch(); got != want {
			t.Errorf("SM version 0x%x: %s, want %s", v, got, want)
		}
	}
}

func TestLackError(t *testing.T) {
	e := allocError(device.DeviceMemory, 100, &RMError{Call: "RM_ALLOC", Status: StatusNoMemory})
	if !errors.Is(e, device.ErrNoMemory) || !errors.Is(e, ErrLacking) {
		t.Errorf("%v is not ErrNoMemory", e)
	}
	e = allocError(device.MappedMemory, 100, errNoAddresses)
	if !errors.Is(e, device.ErrNoMemory) {
		t.Errorf("%v is not ErrNoMemory", e)
	}
	e = allocError(device.PinnedMemory, 100, &RMError{Call: "RM_ALLOC", Status: StatusInvalidArgument})
	if _, ok := device.AsFault(e); !ok {
		t.Errorf("%v is not a fault", e)
	}
	if e := mapError(4096, &RMError{Call: "RM_ALLOC_MEMORY", Status: StatusInsufficientResources}); !errors.Is(e, device.ErrNoRoom) {
		t.Errorf("%v is not ErrNoRoom", e)
	}
	if e := mapError(4096, &RMError{Call: "RM_ALLOC_MEMORY", Status: StatusInvalidArgument}); !errors.Is(e, device.ErrNever) {
		t.Errorf("%v is not ErrNever", e)
	}
	if e := mapError(4096, &RMError{Call: "RM_ALLOC_MEMORY", Status: StatusGPUIsLost}); !isFault(e) {
		t.Errorf("%v is not a fault", e)
	}
}

func isFault(err error) bool { _, ok := device.AsFault(err); return ok }

// Without NVIDIA's driver, Open fails cleanly and leaves nothing open.
func TestOpenWithoutDriver(t *testing.T) {
	if _, err := os.Stat("/dev/nvidiactl"); err == nil {
		t.Skip("this machine has NVIDIA's driver")
	}
	if _, err := Open(0, nil); err == nil {
		t.Fatal("Open succeeded without the driver")
	} else {
		t.Log(err)
	}
	if currentSystem() != nil {
		t.Error("a failed Open left the system open")
	}
	if _, err := Open(-1, nil); err == nil {
		t.Error("Open(-1) succeeded")
	}
}
