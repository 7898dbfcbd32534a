package nvidia

// The parameter blocks of the RM escapes themselves, release 580, are in
// zz_rm_generated.go, which internal/rmgen writes from the C headers
// (generate.go); sizes_test.go checks their sizes against gcc's. A P64
// field (NvP64) holds a user address as a uint64.

// Handle is an RM object's name within its client (NvHandle).
type Handle uint32
