module github.com/rig-go/rig

go 1.26.0

require (
	github.com/HdrHistogram/hdrhistogram-go v1.4.0
	github.com/ebitengine/purego v0.11.3
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.50.0
	golang.org/x/term v0.48.0
)

require github.com/stretchr/testify v1.12.1 // indirect
