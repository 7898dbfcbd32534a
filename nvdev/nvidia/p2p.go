package nvidia

import "structs"

// What peer access takes of the RM and UVM, release 580: the RM's P2P
// capabilities of a pair of GPUs, the duplicate of a memory object under
// another GPU's device, and UVM's peer access between two GPUs of the
// process's UVM space.

// CtrlSystemGetP2PCapsV2 is NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_V2
// (ctrl/ctrl0000/ctrl0000system.h), sent to the client: the P2P
// capabilities between the GPUs of a list of GPU IDs.
const CtrlSystemGetP2PCapsV2 = 0x0000012b

// p2pMaxGPUs is NV0000_CTRL_SYSTEM_MAX_ATTACHED_GPUS, and p2pCapsIndexes
// NV0000_CTRL_P2P_CAPS_INDEX_TABLE_SIZE.
const (
	p2pMaxGPUs     = 32
	p2pCapsIndexes = 9
)

// P2PCapsV2Params mirrors NV0000_CTRL_SYSTEM_GET_P2P_CAPS_V2_PARAMS
// (ctrl/ctrl0000/ctrl0000system.h), 8348 bytes.
type P2PCapsV2Params struct {
	_                  structs.HostLayout
	GPUIDs             [p2pMaxGPUs]uint32 // in: the cards' gpu_ids, the first the local GPU's
	GPUCount           uint32             // in
	P2PCaps            uint32             // out: NV0000_CTRL_SYSTEM_GET_P2P_CAPS_* bits
	P2POptimalReadCEs  uint32
	P2POptimalWriteCEs uint32
	P2PCapsStatus      [p2pCapsIndexes]uint8 // NV0000_P2P_CAPS_STATUS_* by NV0000_CTRL_P2P_CAPS_INDEX_*
	_                  [3]byte
	BusPeerIDs         [p2pMaxGPUs * p2pMaxGPUs]uint32 // [x*GPUCount+y]: GPU x's peer ID of GPU y
	BusEGMPeerIDs      [p2pMaxGPUs * p2pMaxGPUs]uint32
}

// The bits of P2PCapsV2Params.P2PCaps (NV0000_CTRL_SYSTEM_GET_P2P_CAPS_*).
const (
	P2PWrites   = 1 << 0  // WRITES_SUPPORTED
	P2PReads    = 1 << 1  // READS_SUPPORTED
	P2PProp     = 1 << 2  // PROP_SUPPORTED: PCIe through the GPUs' own mailbox
	P2PNVLink   = 1 << 3  // NVLINK_SUPPORTED
	P2PAtomics  = 1 << 4  // ATOMICS_SUPPORTED
	P2PLoopback = 1 << 5  // LOOPBACK_SUPPORTED
	P2PPCI      = 1 << 6  // PCI_SUPPORTED
	P2PC2C      = 1 << 12 // C2C_SUPPORTED
	P2PPCIBAR1  = 1 << 13 // PCI_BAR1_SUPPORTED: PCIe through the peer's BAR1
)

// p2pCapsStatusOK is NV0000_P2P_CAPS_STATUS_OK, and p2pCapsIndexNVLink and
// p2pCapsIndexPCI are NV0000_CTRL_P2P_CAPS_INDEX_NVLINK and _PCI.
const (
	p2pCapsStatusOK    = 0
	p2pCapsIndexNVLink = 2
	p2pCapsIndexPCI    = 6
)

// escRMDupObject is NV_ESC_RM_DUP_OBJECT (nv_escape.h): NVOS55, on
// /dev/nvidiactl.
const escRMDupObject = 0x34

// rmDupObjectParams mirrors NVOS55_PARAMETERS (nvos.h): a new object under
// Parent that names the object ObjectSrc of ClientSrc.
type rmDupObjectParams struct {
	_         structs.HostLayout
	Client    Handle // hClient: the new object's client
	Parent    Handle // hParent: its parent
	Object    Handle // hObject: its handle, 0 for the RM to name it; out: the handle
	ClientSrc Handle // hClientSrc
	ObjectSrc Handle // hObjectSrc
	Flags     uint32 // NV04_DUP_HANDLE_FLAGS_*
	Status    uint32
}

// uvmEnablePeerAccess is UVM_ENABLE_PEER_ACCESS (uvm_ioctl.h). Nothing
// disables it: UVM ends a pair's access itself as either GPU leaves the
// space (UVM_UNREGISTER_GPU).
const uvmEnablePeerAccess = 29

// uvmEnablePeerAccessParams mirrors UVM_ENABLE_PEER_ACCESS_PARAMS
// (uvm_ioctl.h).
type uvmEnablePeerAccessParams struct {
	_        structs.HostLayout
	GPUUUIDA UUID
	GPUUUIDB UUID
	RMStatus uint32
}

// statusInvalidDevice is NV_ERR_INVALID_DEVICE, UVM's answer where peer
// access between two GPUs is not enabled or cannot be.
const statusInvalidDevice = 0x00000026
