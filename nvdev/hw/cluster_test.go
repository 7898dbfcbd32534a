package hw

import (
	"strings"
	"testing"

	"github.com/rig-go/rig/internal/testkernels"
)

// nvcc's cubin of a kernel that requires clusters of two groups along x
// (__cluster_dims__) records the shape (EIATTR_CTA_PER_CLUSTER,
// EIATTR_EXPLICIT_CLUSTER), and its launch is refused, naming the
// clusters: the driver launches no clusters of groups.
func TestClusterKernelRefused(t *testing.T) {
	c, err := Parse(testkernels.Cluster())
	if err != nil {
		t.Fatal(err)
	}
	k, ok := c.Kernel("cluster_add")
	if !ok {
		t.Fatal("no cluster_add in the cubin")
	}
	if k.ClusterDims != [3]int{2, 1, 1} || !k.ExplicitCluster {
		t.Errorf("clusters %v, explicit %v; want 2×1×1, explicit", k.ClusterDims, k.ExplicitCluster)
	}
	if _, err := MakeLaunch(Hopper, k, testImage, DefaultWindows); err == nil || !strings.Contains(err.Error(), "clusters of groups") {
		t.Errorf("the launch of a kernel of clusters: %v", err)
	}
}
