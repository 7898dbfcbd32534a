package profile

import (
	"context"
	"fmt"
	"testing"

	rig "github.com/rig-go/rig/runtime"
)

// BenchmarkSubmit measures what a profile costs a submission on hostdev:
// submissions of an empty launch, pipelined, with no profile taken or one
// taken (stamps, and the observer's copy of the parts). The difference of
// ns/op between the cases is the cost per submission.
func BenchmarkSubmit(b *testing.B) {
	for _, c := range []struct {
		name    string
		profile bool
	}{
		{"plain", false},
		{"profiled", true},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			d := openHost(b, fmt.Sprintf("bench-%s", c.name))
			s := submission(b, d, rigLaunchEmpty(b, d))
			var p *Profile
			if c.profile {
				var err error
				if p, err = Start(d); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := s.Take().Submit(ctx); err != nil {
					b.Fatal(err)
				}
			}
			if err := d.Last().Wait(ctx); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if p != nil {
				if err := p.Stop(ctx); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(len(p.Spans())+int(p.Dropped()))/float64(b.N), "spans/op")
			}
		})
	}
}

func rigLaunchEmpty(b *testing.B, d *rig.Device) rig.Part {
	return rig.Launch(resolve(b, d, "empty"), 0)
}
