package nvidia

// The RM's parameter structs (zz_rm_generated.go), the test of their
// layouts and of the hand-written constants against the headers
// (zz_rm_generated_test.go) and the status table (zz_status_generated.go) are
// written by internal/rmgen from the C headers of NVIDIA's
// open-gpu-kernel-modules at release 580. To write them again, check that
// repository out at a 580 tag and run, in this directory,
//
//	OPEN_GPU_KERNEL_MODULES=/path/to/open-gpu-kernel-modules go generate
//
// The build and the tests use the files as committed; nothing runs the
// generator but go generate.

//go:generate go run ./internal/rmgen -o .
