package device

// AtLeast reports whether x is at least w in circular order: x - w, as a
// signed 64-bit integer, is not negative. Every comparison of timeline
// values uses it, so that values may wrap.
func AtLeast(x, w uint64) bool { return int64(x-w) >= 0 }
