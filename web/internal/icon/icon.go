// Package icon draws ferry's app icon as a bitmap, the same picture as
// web/static/favicon.svg (a boat on a teal tile), for what needs PNGs: the
// web app manifest's icons and the apple-touch-icon. The PNGs in
// web/static/icons are its output, checked in; web's tests check that they
// still are (go generate ./web writes them again).
//
// It guarantees a deterministic image of the size asked for: the same
// size and kind always give the same pixels.
package icon

import (
	"image"
	"image/color"
	"image/draw"

	"golang.org/x/image/vector"
)

// Kind is how the picture fills its square.
type Kind int

const (
	// Any is the favicon's tile: rounded corners, transparent outside them.
	Any Kind = iota
	// Maskable fills the whole square and keeps the boat inside the
	// central circle that every platform's mask leaves visible (the "safe
	// zone": 80% of the size).
	Maskable
)

// The favicon's colours and shapes, in its 64×64 viewBox.
var (
	teal  = color.NRGBA{R: 0x0b, G: 0x6e, B: 0x69, A: 0xff}
	hull  = color.NRGBA{R: 0xff, G: 0xff, B: 0xff, A: 0xff}
	sail1 = color.NRGBA{R: 0xff, G: 0xff, B: 0xff, A: 0xe6} // opacity .9
	sail2 = color.NRGBA{R: 0xff, G: 0xff, B: 0xff, A: 0xbf} // opacity .75

	shapes = []struct {
		fill   color.NRGBA
		points [][2]float32
	}{
		{hull, [][2]float32{{10, 40}, {54, 40}, {48, 50}, {16, 50}}},
		{sail1, [][2]float32{{31, 12}, {31, 36}, {17, 36}}},
		{sail2, [][2]float32{{35, 18}, {35, 36}, {47, 36}}},
	}
)

// Draw returns the icon as a size×size image.
func Draw(size int, kind Kind) *image.NRGBA {
	dst := image.NewNRGBA(image.Rect(0, 0, size, size))
	s := float32(size) / 64
	if kind == Maskable {
		draw.Draw(dst, dst.Bounds(), image.NewUniform(teal), image.Point{}, draw.Src)
	} else {
		fill(dst, roundedRect(s), teal)
	}
	// The boat spans about 29 units from the tile's centre; a maskable
	// icon shrinks it to stay within the safe circle (radius 25.6 units).
	scale, shift := s, float32(0)
	if kind == Maskable {
		scale = s * 0.8
		shift = 32 * (s - scale)
	}
	for _, sh := range shapes {
		fill(dst, func(r *vector.Rasterizer) {
			for i, p := range sh.points {
				x, y := p[0]*scale+shift, p[1]*scale+shift
				if i == 0 {
					r.MoveTo(x, y)
				} else {
					r.LineTo(x, y)
				}
			}
			r.ClosePath()
		}, sh.fill)
	}
	return dst
}

// fill paints the path that build adds, in c, over dst.
func fill(dst *image.NRGBA, build func(*vector.Rasterizer), c color.NRGBA) {
	b := dst.Bounds()
	r := vector.NewRasterizer(b.Dx(), b.Dy())
	r.DrawOp = draw.Over
	build(r)
	r.Draw(dst, b, image.NewUniform(c), image.Point{})
}

// roundedRect is the favicon's tile (rx 14) at scale s.
func roundedRect(s float32) func(*vector.Rasterizer) {
	return func(r *vector.Rasterizer) {
		const k = 0.5523 // a quarter circle as a cubic Bézier
		w, rad := 64*s, 14*s
		c := rad * k
		r.MoveTo(rad, 0)
		r.LineTo(w-rad, 0)
		r.CubeTo(w-rad+c, 0, w, rad-c, w, rad)
		r.LineTo(w, w-rad)
		r.CubeTo(w, w-rad+c, w-rad+c, w, w-rad, w)
		r.LineTo(rad, w)
		r.CubeTo(rad-c, w, 0, w-rad+c, 0, w-rad)
		r.LineTo(0, rad)
		r.CubeTo(0, rad-c, rad-c, 0, rad, 0)
		r.ClosePath()
	}
}

// File is one PNG the UI ships.
type File struct {
	Name string // below web/static
	Size int
	Kind Kind
}

// Files are the PNGs web/static/icons holds, as the manifest and the page
// name them.
var Files = []File{
	{"icons/icon-192.png", 192, Any},
	{"icons/icon-512.png", 512, Any},
	{"icons/maskable-192.png", 192, Maskable},
	{"icons/maskable-512.png", 512, Maskable},
	{"icons/apple-touch-icon.png", 180, Maskable}, // iOS rounds it itself
}
