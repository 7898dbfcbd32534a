package rig

import "context"

// Do submits the run and waits for its point, for the goroutine that has
// nothing to do in between, as a server's request often does: it returns
// what Submit returns where that is an error, and otherwise what Wait on
// the point returns, with the same rules for the run, its buffers and ctx.
// A Do whose ctx ends while it waits returns ctx.Err(); the work,
// submitted, still runs. A nil ctx panics.
func (r *Run) Do(ctx context.Context, buffers ...*Buffer) error {
	p, err := r.Submit(ctx, buffers...)
	if err != nil {
		return err
	}
	return p.Wait(ctx)
}
