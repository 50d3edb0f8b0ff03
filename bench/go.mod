module github.com/proclock/proclock/bench

go 1.26.0

require (
	github.com/gofrs/flock v0.13.2
	github.com/nightlyone/lockfile v1.0.0
	github.com/proclock/proclock v0.0.0
	github.com/rogpeppe/go-internal v1.16.0
	golang.org/x/sys v0.50.0
)

require (
	github.com/ncruces/go-sqlite3 v0.37.0 // indirect
	github.com/ncruces/go-sqlite3-wasm/v6 v6.5.35401 // indirect
	github.com/ncruces/julianday v1.0.0 // indirect
)

replace github.com/proclock/proclock => ../
