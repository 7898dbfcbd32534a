package nvidia

// The GPU's non-stall interrupts as a file the host waits on.
//
// A channel raises its engine's non-stall interrupt with the host method
// NON_STALL_INTERRUPT (nvdev/hw's NonStallInterrupt). The RM posts it to
// every event registered for that engine on the subdevice: an object of
// NV01_EVENT_OS_EVENT under the subdevice whose notify index is the
// engine's NV2080_NOTIFIERS_* number with NV01_EVENT_NONSTALL_INTR set
// (only a subdevice takes such an event, event_notification.c). An OS
// event stands for a file of /dev/nvidiactl: NV_ESC_ALLOC_OS_EVENT on that
// file registers it under the client and the number of the file, and the
// event object's data is that number. The RM then marks the file (with
// NV01_EVENT_WITHOUT_EVENT_DATA, a flag rather than a queue of records)
// and wakes its pollers: poll returns POLLIN|POLLPRI and clears the flag,
// so nothing is left to read (NV_ESC_RM_GET_EVENT_DATA reads only records
// of events with data). Non-stall events need no
// NV2080_CTRL_CMD_EVENT_SET_NOTIFICATION: the RM notifies the engine's list
// at each interrupt. A GPU the driver lost returns POLLHUP.

// Notifier indices of a subdevice (class/cl2080_notification.h).
const (
	NotifierGraphics = 12 // NV2080_NOTIFIERS_GRAPHICS (GR0)
	NotifierHost     = 35 // NV2080_NOTIFIERS_FIFO_EVENT_MTHD: every host-driven engine
)

// Flags of an event's notify index (nvos.h, NV01_EVENT_*).
const (
	eventWithoutData = 0x10000000 // NV01_EVENT_WITHOUT_EVENT_DATA
	eventNonStall    = 0x08000000 // NV01_EVENT_NONSTALL_INTR
)

// escAllocOSEvent and escFreeOSEvent register and unregister a file as an
// OS event (nv-ioctl-numbers.h).
const (
	escAllocOSEvent = nvIoctlBase + 6 // NV_ESC_ALLOC_OS_EVENT: nv_ioctl_alloc_os_event_t
	escFreeOSEvent  = nvIoctlBase + 7 // NV_ESC_FREE_OS_EVENT: nv_ioctl_free_os_event_t
)
