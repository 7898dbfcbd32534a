package nvidia

// What peer access takes of the RM and UVM, release 580: the RM's P2P
// capabilities of a pair of GPUs, the duplicate of a memory object under
// another GPU's device, and UVM's peer access between two GPUs of the
// process's UVM space.

// CtrlSystemGetP2PCapsV2 is NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_V2
// (ctrl/ctrl0000/ctrl0000system.h), sent to the client: the P2P
// capabilities between the GPUs of a list of GPU IDs.
const CtrlSystemGetP2PCapsV2 = 0x0000012b

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

// uvmEnablePeerAccess is UVM_ENABLE_PEER_ACCESS (uvm_ioctl.h). Nothing
// disables it: UVM ends a pair's access itself as either GPU leaves the
// space (UVM_UNREGISTER_GPU).
const uvmEnablePeerAccess = 29
