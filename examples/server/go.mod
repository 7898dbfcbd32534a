module github.com/rig-go/rig/examples/server

go 1.26.0

require (
	github.com/rig-go/rig v0.0.0
	github.com/tsenart/vegeta/v12 v12.13.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/ebitengine/purego v0.11.3 // indirect
	github.com/influxdata/tdigest v0.0.1 // indirect
	github.com/josharian/intern v1.0.0 // indirect
	github.com/mailru/easyjson v0.7.7 // indirect
	github.com/rs/dnscache v0.0.0-20230804202142-fc85eb664529 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/net v0.27.0 // indirect
	golang.org/x/sync v0.7.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.16.0 // indirect
)

replace github.com/rig-go/rig => ../..
