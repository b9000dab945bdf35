module github.com/rookhq/rook/bench

go 1.26.0

require (
	github.com/rookhq/rook v0.0.0
	go.etcd.io/bbolt v1.5.0
)

require (
	github.com/BurntSushi/toml v1.6.0 // indirect
	github.com/google/renameio/v2 v2.0.2 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/klauspost/cpuid/v2 v2.0.12 // indirect
	github.com/sergi/go-diff v1.4.0 // indirect
	github.com/zeebo/blake3 v0.2.4 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/rookhq/rook => ../
