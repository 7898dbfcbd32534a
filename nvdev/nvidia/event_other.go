//go:build !linux || 386 || arm || mips || mipsle

package nvidia

import "time"

// Event is the non-stall interrupt's file, which only 64-bit Linux has.
type Event struct{}

// NonStallEvent returns an error naming the system: the driver's files
// are those of 64-bit Linux.
func (p *Client) NonStallEvent(notifier uint32) (*Event, error) { return nil, errNotLinux }

// Wait returns an error: an Event is never made there.
func (e *Event) Wait(time.Duration) (bool, error) { return false, errNotLinux }

// Close does nothing.
func (e *Event) Close() error { return nil }
