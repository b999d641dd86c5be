module github.com/ferry-dev/ferry/bench

go 1.26.6

require (
	github.com/coder/websocket v1.8.15
	github.com/ferry-dev/ferry v0.0.0
	github.com/jackc/pgx/v5 v5.12.0
	github.com/junegunn/fzf v0.65.2
	golang.org/x/text v0.44.0
)

require (
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/ferry-dev/ferry => ../
