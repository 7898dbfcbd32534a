package main

import (
	"slices"
	"testing"
)

func TestParseCPUs(t *testing.T) {
	for _, c := range []struct {
		list string
		want []int
		bad  bool
	}{
		{"", nil, false},
		{"0", []int{0}, false},
		{"0-3", []int{0, 1, 2, 3}, false},
		{"1,4-5,9", []int{1, 4, 5, 9}, false},
		{"3-3", []int{3}, false},
		{"5-2", nil, true},
		{"-1", nil, true},
		{"a", nil, true},
		{"1,", nil, true},
		{"0-", nil, true},
		{"1024", nil, true},
		{"0-99999999999999999999", nil, true},
	} {
		s, err := parseCPUs(c.list)
		if (err != nil) != c.bad {
			t.Errorf("parseCPUs(%q): %v", c.list, err)
			continue
		}
		if c.bad {
			continue
		}
		if !slices.Equal(s, c.want) {
			t.Errorf("parseCPUs(%q) = %v, want %v", c.list, s, c.want)
		}
	}
}
