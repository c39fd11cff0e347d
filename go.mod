module github.com/convgen/convgen

go 1.25.0

require (
	github.com/dave/jennifer v1.7.1
	github.com/ebitengine/purego v0.11.3
	github.com/spf13/pflag v1.0.10
	golang.org/x/sys v0.41.0
	golang.org/x/term v0.40.0
	gorgonia.org/cu v0.9.6
)

require (
	github.com/google/uuid v1.1.1 // indirect
	github.com/pkg/errors v0.9.1 // indirect
)
