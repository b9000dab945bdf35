module github.com/rookhq/rook

go 1.26.0

require (
	github.com/alecthomas/kong v1.17.0 // indirect
	github.com/google/renameio/v2 v2.0.2 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/klauspost/cpuid/v2 v2.0.12 // indirect
	github.com/rogpeppe/go-internal v1.16.0 // indirect
	github.com/zeebo/blake3 v0.2.4 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/term v0.48.0 // indirect
	golang.org/x/tools v0.26.0 // indirect
)
