//go:build !linux

package nvidia

import "time"

// Event is the non-stall interrupt's file, which only Linux has.
type Event struct{}

// NonStallEvent returns an error naming the operating system: the driver's
// files are Linux's.
func (p *Client) NonStallEvent(notifier uint32) (*Event, error) { return nil, errNotLinux }

// Wait returns an error: an Event is never made off Linux.
func (e *Event) Wait(time.Duration) (bool, error) { return false, errNotLinux }

// Close does nothing.
func (e *Event) Close() error { return nil }
