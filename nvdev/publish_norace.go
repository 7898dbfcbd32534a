//go:build !race

package nvdev

// storePut stores GPPut: a plain store into the BAR (or Pinned memory),
// which Ring orders before the doorbell.
func storePut(p *uint32, v uint32) { *p = v }
