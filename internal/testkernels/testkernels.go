// Package testkernels holds the one set of GPU test kernels that every
// package's tests, and rigbench, load: the CUDA sources, the script that
// builds them and the images it built, embedded.
//
// kernels.cu is the set, each kernel exercising one thing a driver must
// handle (see its comments); Cubin, PTX and Fatbin return its images.
// NVCubin returns the set less uses_printf and uses_assert, whose images
// refer to vprintf and __assertfail, which only CUDA supplies: the images
// of drivers that run without CUDA (kernels.cu built with
// -DNO_DEVICE_LIBRARY).
// Portable returns empty and twice as PTX that any GPU of compute
// capability 5.2 or later loads. Spin returns spin_ns, a kernel that holds
// its multiprocessors for a given number of nanoseconds of the GPU's
// clock, as PTX written by hand. Cluster returns cluster_add, a kernel that
// requires clusters of groups, as an sm_90 cubin of its own. build.sh
// rebuilds the images with nvcc,
// and assembles spin_ns into the sm_90 cubin of the RM driver's tests.
//
// Every function returns a fresh copy, which the caller owns and may
// change. Each image is its own variable, so that a program links only the
// images it names.
package testkernels

import (
	_ "embed"
	"slices"
)

// The images of kernels.cu.
var (
	//go:embed kernels.sm_80.cubin
	sm80 []byte
	//go:embed kernels.sm_86.cubin
	sm86 []byte
	//go:embed kernels.sm_89.cubin
	sm89 []byte
	//go:embed kernels.sm_90.cubin
	sm90 []byte
	//go:embed kernels.compute_90.ptx
	ptx []byte
	//go:embed kernels.fatbin
	fatbin []byte
)

// The image of kernels.cu without CUDA's device library, the sources and
// the build script.
var (
	//go:embed kernels_nv.sm_90.cubin
	nvSM90 []byte
	//go:embed portable.ptx
	portable []byte
	//go:embed spin.ptx
	spin []byte
	//go:embed cluster.sm_90.cubin
	cluster []byte
	//go:embed kernels.cu
	source []byte
	//go:embed build.sh
	buildScript []byte
)

// Archs are the architectures, named as nvcc names them, that kernels.cu
// has a cubin for, oldest first.
var Archs = []string{"sm_80", "sm_86", "sm_89", "sm_90"}

// NVArchs are the architectures that NVCubin has a cubin for.
var NVArchs = []string{"sm_90"}

// Cubin returns kernels.cu's cubin for arch (such as "sm_90"), and false
// where none is embedded.
func Cubin(arch string) ([]byte, bool) {
	switch arch {
	case "sm_80":
		return slices.Clone(sm80), true
	case "sm_86":
		return slices.Clone(sm86), true
	case "sm_89":
		return slices.Clone(sm89), true
	case "sm_90":
		return slices.Clone(sm90), true
	}
	return nil, false
}

// Image returns the image of kernels.cu that a CUDA driver loads on arch:
// its cubin where one is embedded, the compute_90 PTX otherwise (which the
// driver compiles for GPUs of compute capability 9.0 or later).
func Image(arch string) []byte {
	if b, ok := Cubin(arch); ok {
		return b
	}
	return PTX()
}

// PTX returns kernels.cu as compute_90 PTX.
func PTX() []byte { return slices.Clone(ptx) }

// Fatbin returns kernels.cu as a fatbin of its sm_80 and sm_90 cubins.
func Fatbin() []byte { return slices.Clone(fatbin) }

// NVCubin returns the cubin for arch of kernels.cu without uses_printf
// and uses_assert, and false where none is embedded.
func NVCubin(arch string) ([]byte, bool) {
	if arch == "sm_90" {
		return slices.Clone(nvSM90), true
	}
	return nil, false
}

// Portable returns the PTX of empty and twice for any GPU of compute
// capability 5.2 or later.
func Portable() []byte { return slices.Clone(portable) }

// Spin returns spin.ptx: spin_ns(out, ns), which spins in each thread
// until the GPU's nanosecond clock (%globaltimer) passes the thread's first
// reading by ns, then has thread 0 of group 0 write its first and last
// readings to out[0] and out[1], for any GPU of compute capability 8.0 or
// later. Its parameters are the address out in bytes 0 to 8 and ns in bytes
// 8 to 16.
func Spin() []byte { return slices.Clone(spin) }

// Cluster returns the sm_90 cubin of cluster.cu: cluster_add(p), which
// adds 1 to p[blockIdx.x] (a uint32) and requires clusters of two groups
// along x, so that no grid of an odd x launches.
func Cluster() []byte { return slices.Clone(cluster) }

// Source returns kernels.cu.
func Source() []byte { return slices.Clone(source) }

// BuildScript returns build.sh, which builds the images from the sources.
func BuildScript() []byte { return slices.Clone(buildScript) }
