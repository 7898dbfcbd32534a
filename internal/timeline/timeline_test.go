package timeline

import (
	"testing"
	"unsafe"
)

func TestTakeGiveKeepsValue(t *testing.T) {
	base, n, err := Array()
	if err != nil {
		t.Fatal(err)
	}
	if base%4096 != 0 || n != Bytes {
		t.Fatalf("array at %#x of %d bytes: want page-aligned %d", base, n, Bytes)
	}
	i, w, err := Take()
	if err != nil {
		t.Fatal(err)
	}
	if !Contains(w) {
		t.Fatal("a taken word lies outside the array")
	}
	Store(w, 41)
	Give(i)
	j, w2, err := Take()
	if err != nil {
		t.Fatal(err)
	}
	defer Give(j)
	if j != i || w2 != w {
		t.Fatalf("slot %d after giving %d back", j, i)
	}
	if Load(w2) != 41 {
		t.Fatalf("word reads %d after passing on, want 41", Load(w2))
	}
	var outside uint64
	if Contains(&outside) {
		t.Fatal("a word outside the array counts as inside")
	}
	if Contains((*uint64)(unsafe.Add(unsafe.Pointer(w), 1))) {
		t.Fatal("a misaligned address counts as a word")
	}
}

func TestFull(t *testing.T) {
	var got []int
	for {
		i, _, err := Take()
		if err == ErrFull {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, i)
	}
	if len(got) == 0 {
		t.Fatal("no word taken")
	}
	for _, i := range got {
		Give(i)
	}
	if _, _, err := Take(); err != nil {
		t.Fatalf("after giving back: %v", err)
	} else {
		Give(got[0])
	}
}
