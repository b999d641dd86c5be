// Package docread turns the documents Read returns as more than text
// (images, PDFs and Jupyter notebooks) into what an agent is sent. It owns
// their decoders and third-party dependencies, and knows nothing of tools,
// sessions or the read state.
//
// Its guarantees for images:
//   - A format is told by magic bytes (ImageFormat), never by name.
//   - Nothing is decoded past MaxImageFileBytes or MaxImagePixels; those
//     refusals, undecodable data and images that cannot be shrunk enough
//     are typed errors the caller words for itself.
//   - A prepared image is at most MaxImageEncodedBytes with its longer
//     side at most the given dimension, keeping the aspect; a PNG or JPEG
//     that needs neither is returned as its own bytes.
//   - Shrinking averages areas (no aliasing) a source row at a time, and
//     stops when the context is done.
//
// For PDFs:
//   - pdfcpu runs without a config directory (it would otherwise create
//     one in the user's), and without its api package, whose dependencies
//     slow every ferry command's start.
//   - Damage pdfcpu reports by panicking is an error like any other.
//   - Extracted pages are a new, valid PDF of just those pages.
//
// For notebooks it is the nbformat 4 model: strings given as a string or
// as lines read alike, and a notebook without a "cells" array is told
// apart from one with none.
package docread
