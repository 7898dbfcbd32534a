//go:build linux && (amd64 || arm64)

package cudadev

import (
	"errors"
	"testing"
)

// fakeLoader is a dynamic loader whose library is the fake table's: each
// open answers a new handle, and sym resolves every name of symbols but
// lacking, from the table that fakeTable made.
type fakeLoader struct {
	tab     *table
	lacking string
	next    uintptr
	open    map[uintptr]bool // the handles opened and not closed
	opens   int
	bad     []string // closes of handles not open
}

func newFakeLoader(tab *table) *fakeLoader {
	return &fakeLoader{tab: tab, next: 0x1b0, open: map[uintptr]bool{}}
}

func (l *fakeLoader) loader() loader {
	addrs := map[string]uintptr{}
	for _, s := range symbols {
		for _, n := range s.names {
			addrs[n] = *s.at(l.tab)
		}
	}
	return loader{
		open: func([]string) (uintptr, error) {
			l.next++
			l.opens++
			l.open[l.next] = true
			return l.next, nil
		},
		sym: func(h uintptr, name string) (uintptr, error) {
			if !l.open[h] {
				l.bad = append(l.bad, "a symbol of a handle not open")
			}
			if name == l.lacking || addrs[name] == 0 {
				return 0, errors.New(name + ": undefined symbol")
			}
			return addrs[name], nil
		},
		close: func(h uintptr) error {
			if !l.open[h] {
				l.bad = append(l.bad, "a close of a handle not open")
				return errors.New("invalid handle")
			}
			delete(l.open, h)
			return nil
		},
	}
}

// TestLoadFailureClosesLibrary fails a load of libcuda after its open, at
// each step: a symbol missing, cuInit refused, cuDriverGetVersion refused,
// a CUDA older than 12.4. A load that failed before cuInit closes the
// library it opened; the first that failed after cuInit keeps its
// reference (libcuda's teardown at a close after cuInit can crash), and
// later ones close theirs, so that failed loads keep one reference in all;
// a later load opens the library again and succeeds, keeping its own.
func TestLoadFailureClosesLibrary(t *testing.T) {
	keptLib.Lock()
	kept := keptLib.held
	keptLib.held = false
	keptLib.Unlock()
	t.Cleanup(func() {
		keptLib.Lock()
		keptLib.held = kept
		keptLib.Unlock()
	})
	var version int32
	var refuseInit, refuseVersion bool
	tab := fakeTable(t, map[string]fakeFn{
		"cuInit": func([6]uintptr) result {
			if refuseInit {
				return errUnknown
			}
			return 0
		},
		"cuDriverGetVersion": func(a [6]uintptr) result {
			if refuseVersion {
				return errUnknown
			}
			*(*int32)(ptr(a[0])) = version
			return 0
		},
	})
	l := newFakeLoader(tab)
	ld := l.loader()
	for _, c := range []struct {
		name                      string
		lacking                   string
		refuseInit, refuseVersion bool
		version                   int32
		kept                      int // the handles failed loads keep open after it
	}{
		{name: "missing symbol", lacking: "cuFuncLoad", version: minVersion},
		{name: "cuInit refused", refuseInit: true, version: minVersion, kept: 1},
		{name: "version refused", refuseVersion: true, version: minVersion, kept: 1},
		{name: "version too old", version: 12030, kept: 1},
		{name: "missing symbol again", lacking: "cuFuncLoad", version: minVersion, kept: 1},
	} {
		l.lacking, refuseInit, refuseVersion, version = c.lacking, c.refuseInit, c.refuseVersion, c.version
		opens := l.opens
		if _, err := openLib(ld); err == nil {
			t.Fatalf("%s: the load answered no error", c.name)
		}
		if l.opens != opens+1 || len(l.open) != c.kept {
			t.Errorf("%s: %d opens, %d handles left open; want 1 open, %d left open", c.name, l.opens-opens, len(l.open), c.kept)
		}
	}
	l.lacking, refuseInit, refuseVersion, version = "", false, false, 13000
	got, err := openLib(ld)
	if err != nil {
		t.Fatalf("the load after the failed ones: %v", err)
	}
	if len(l.open) != 2 || !l.open[got.handle] || got.version != 13000 {
		t.Fatalf("the loads keep %d handles open (its own: %v), version %d; want its one and the failed loads' one, version 13000", len(l.open), l.open[got.handle], got.version)
	}
	if len(l.bad) != 0 {
		t.Fatalf("the loads misused the loader: %q", l.bad)
	}
}
