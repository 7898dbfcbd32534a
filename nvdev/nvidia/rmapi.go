package nvidia

import (
	"sync"

	"github.com/rig-go/rig/device"
)

// RM is a GPU's resource manager as a path reaches it: the
// allocations, frees and commands a device sends, which this
// path returns through NVIDIA's kernel driver. Any goroutine may call its
// methods at any time.
//
// Each method returns a refusal of the RM or of the kernel as a *RMError,
// for which errors.Is(err, ErrLacking) or errors.Is(err, ErrRefused) holds,
// and any other failure, such as a GPU the driver lost, as a *device.Fault.
type RM struct {
	r       rm
	release int
	objs    *objects // the objects made through Alloc, alive, of every RM of the client
}

// objects are the objects made through the Alloc of the RMs of one client,
// alive: a Free through any of them frees an object's descendants made
// through the others, and forgets them for all.
type objects struct {
	mu sync.Mutex
	m  map[Handle]object
}

// object is an object made through RM.Alloc.
type object struct {
	parent Handle
	class  uint32
	by     *RM // the RM whose Alloc made it
}

// newRM is an RM of the client of r, whose objects are recorded in objs
// with those of the client's other RMs; nil objs records them apart.
func newRM(r rm, release int, objs *objects) *RM {
	if objs == nil {
		objs = &objects{}
	}
	objs.mu.Lock()
	if objs.m == nil {
		objs.m = map[Handle]object{}
	}
	objs.mu.Unlock()
	return &RM{r: r, release: release, objs: objs}
}

// Release is the release of the RM's interface, such as 580, which sets the
// layout of the parameters that changed between releases.
func (m *RM) Release() int { return m.release }

// Client is the client the device's objects descend from.
func (m *RM) Client() Handle { return m.r.client }

// Alloc makes a new object of class under parent with the parameters
// params (NV_ESC_RM_ALLOC), which the RM reads and may write back; nil
// params send none. Bytes gives the bytes of a typed block.
func (m *RM) Alloc(parent Handle, class uint32, params []byte) (Handle, error) {
	h, err := m.r.alloc(parent, class, params)
	if err != nil {
		return 0, asFault(err)
	}
	m.objs.mu.Lock()
	m.objs.m[h] = object{parent: parent, class: class, by: m}
	m.objs.mu.Unlock()
	return h, nil
}

// Free frees object, under parent, and every object under it
// (NV_ESC_RM_FREE). The RM frees the objects before the call returns.
func (m *RM) Free(parent, object Handle) error {
	if err := m.r.free(parent, object); err != nil {
		return asFault(err)
	}
	m.forget(object)
	return nil
}

// forget drops object and its descendants from the objects made, through
// any RM of the client.
func (m *RM) forget(object Handle) {
	m.objs.mu.Lock()
	defer m.objs.mu.Unlock()
	gone := map[Handle]bool{object: true}
	delete(m.objs.m, object)
	for changed := true; changed; {
		changed = false
		for h, o := range m.objs.m {
			if gone[o.parent] {
				gone[h] = true
				delete(m.objs.m, h)
				changed = true
			}
		}
	}
}

// made lists the objects made through m's Alloc, alive, of the classes in
// classes, that no other such object is an ancestor of.
func (m *RM) made(classes ...uint32) []Handle {
	m.objs.mu.Lock()
	defer m.objs.mu.Unlock()
	of := func(c uint32) bool {
		for _, x := range classes {
			if x == c {
				return true
			}
		}
		return false
	}
	var hs []Handle
	for h, o := range m.objs.m {
		if o.by != m || !of(o.class) {
			continue
		}
		top := true
		for p := o.parent; ; {
			po, ok := m.objs.m[p]
			if !ok {
				break
			}
			if of(po.class) {
				top = false
				break
			}
			p = po.parent
		}
		if top {
			hs = append(hs, h)
		}
	}
	return hs
}

// Control sends the command cmd to object with params, whose size must be
// the command's (NV_ESC_RM_CONTROL). The RM reads and writes params in
// place. A block that points to other memory must point to memory that
// does not move, such as the Go heap's.
func (m *RM) Control(object Handle, cmd uint32, params []byte) error {
	return asFault(m.r.control(object, cmd, params))
}

// Token is the work submit token of the channel, the word a device stores
// at the doorbell to wake it (NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN).
func (m *RM) Token(channel Handle) (uint32, error) {
	p := WorkSubmitTokenParams{WorkSubmitToken: ^uint32(0)}
	if err := controlOf(m.r, channel, CtrlGetWorkSubmitToken, &p); err != nil {
		return 0, asFault(err)
	}
	return p.WorkSubmitToken, nil
}

// Schedule schedules the channels of the channel group group as p says
// (NVA06C_CTRL_CMD_GPFIFO_SCHEDULE).
func (m *RM) Schedule(group Handle, p *ScheduleParams) error {
	return asFault(controlOf(m.r, group, CtrlChannelGroupSchedule, p))
}

// ScheduleChannel schedules the channel channel as p says
// (NVA06F_CTRL_CMD_GPFIFO_SCHEDULE): a channel that joins a channel group
// the RM already schedules, which the group's schedule did not cover.
func (m *RM) ScheduleChannel(channel Handle, p *ScheduleParams) error {
	return asFault(controlOf(m.r, channel, CtrlChannelSchedule, p))
}

// Disown forgets object, made through Alloc, without freeing it: the
// path's Stop leaves it, and the caller frees it (Free, through any path
// of the client). The objects under it stay the path's until then.
func (m *RM) Disown(object Handle) {
	m.objs.mu.Lock()
	delete(m.objs.m, object)
	m.objs.mu.Unlock()
}

// parentOf is the parent of object, made through Alloc and alive.
func (m *RM) parentOf(object Handle) Handle {
	m.objs.mu.Lock()
	defer m.objs.mu.Unlock()
	return m.objs.m[object].parent
}

// Boost raises the clocks of the GPU of subdevice to their maximum, at
// CUDA's high priority, with no end (NV2080_CTRL_CMD_PERF_BOOST with
// BOOST_TO_MAX, CUDA_YES and CUDA_PRIORITY_HIGH, for DURATION_INFINITE).
func (m *RM) Boost(subdevice Handle) error {
	p := PerfBoostParams{
		Flags:    PerfBoostToMax | PerfBoostCUDA | PerfBoostCUDAPriority,
		Duration: PerfBoostInfinite,
	}
	return asFault(controlOf(m.r, subdevice, CtrlPerfBoost, &p))
}

// SMErrors reads into p the errors of the multiprocessors p asks for,
// through the debugger object debugger
// (NV83DE_CTRL_CMD_DEBUG_READ_ALL_SM_ERROR_STATES).
func (m *RM) SMErrors(debugger Handle, p *SMErrorStatesParams) error {
	return asFault(controlOf(m.r, debugger, CtrlDebugReadAllSMErrors, p))
}

// MMUFaults reads into p the MMU's faults the debugger object debugger
// recorded (NV83DE_CTRL_CMD_DEBUG_READ_MMU_FAULT_INFO).
func (m *RM) MMUFaults(debugger Handle, p *MMUFaultInfoParams) error {
	return asFault(controlOf(m.r, debugger, CtrlDebugReadMMUFaultInfo, p))
}

// asFault passes a refusal on and turns a fatal answer into a
// *device.Fault.
func asFault(err error) error {
	if e, ok := AsRMError(err); ok && e.Fatal() {
		return &device.Fault{Why: e.Error()}
	}
	return err
}
