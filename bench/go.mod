module github.com/ferry-dev/ferry/bench

go 1.26.0

require (
	github.com/ferry-dev/ferry v0.0.0
	github.com/junegunn/fzf v0.65.2
	golang.org/x/text v0.44.0
)

require (
	github.com/charlievieth/fastwalk v1.0.12 // indirect
	github.com/clipperhouse/uax29/v2 v2.7.0 // indirect
	github.com/gdamore/encoding v1.0.1 // indirect
	github.com/gdamore/tcell/v2 v2.8.1 // indirect
	github.com/junegunn/go-shellwords v0.0.0-20250127100254-2aa3b3277741 // indirect
	github.com/lucasb-eyer/go-colorful v1.2.0 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/mattn/go-runewidth v0.0.27 // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/term v0.29.0 // indirect
)

replace github.com/ferry-dev/ferry => ../
