module github.com/ferry-dev/ferry/bench

go 1.26.0

require (
	github.com/coder/websocket v1.8.15
	github.com/ferry-dev/ferry v0.0.0
	github.com/junegunn/fzf v0.65.2
	golang.org/x/text v0.44.0
)

require (
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/ferry-dev/ferry => ../
