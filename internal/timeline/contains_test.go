package timeline

import (
	"os"
	"os/exec"
	"testing"
)

// TestContainsBeforeArray runs Contains beside the first Take, in a
// process of its own where nothing mapped the array yet. Under the race
// detector a Contains that reads the array's place outside the mapping's
// once is reported, and the process fails.
func TestContainsBeforeArray(t *testing.T) {
	if os.Getenv("TIMELINE_CONTAINS_CHILD") == "1" {
		var outside uint64
		done := make(chan bool)
		go func() {
			in := false
			for range 1000 {
				in = in || Contains(&outside)
			}
			done <- in
		}()
		i, w, err := Take()
		if err != nil {
			t.Fatal(err)
		}
		defer Give(i)
		if <-done {
			t.Error("a word outside the array counts as inside")
		}
		if !Contains(w) {
			t.Error("a taken word lies outside the array")
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestContainsBeforeArray$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TIMELINE_CONTAINS_CHILD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("Contains beside the first Take, in a process of its own: %v\n%s", err, out)
	}
}
