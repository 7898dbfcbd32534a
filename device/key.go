package device

import (
	"time"
)

// Key names a capability record of type T. A driver declares its key in
// Facts.Capability, and rig.Capability returns Driver.Capability as a T
// when asked with that key. Keys compare by identity.
type Key[T any] struct{ name string }

// NewKey makes a key for records of type T.
func NewKey[T any](name string) *Key[T] { return &Key[T]{name: name} }

// String is the key's name.
func (k *Key[T]) String() string { return k.name }

var epoch = time.Now()

// Now is the host's clock as profiles and drivers' stamps use it:
// nanoseconds on the monotonic clock since the process loaded rig.
func Now() int64 { return int64(time.Since(epoch)) }

// Epoch is the wall-clock time at which Now read 0.
func Epoch() time.Time { return epoch }
