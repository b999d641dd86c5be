package protocol

import (
	"encoding/base64"
	"fmt"
	"mime"
	"net/url"
	"strings"
	"unicode"
)

// MaxContextFilesBytes caps the file_url bytes of one prompt's
// context_files together: data: URLs carry content inline, and a prompt
// is persisted and relayed, so attachments get a budget of their own well
// inside MaxMessageBytes.
const MaxContextFilesBytes = 256 << 10

// validateContextFiles checks a prompt's context_files the way file
// references are checked: nothing reaches a client that it could be made to
// fetch or show harmfully. A file_url is https with a host and no
// credentials (never file:, http:, a relative path or a script), or a
// well-formed data: URL; the URLs together stay within
// MaxContextFilesBytes; a file_name is a bare name (no path, no control or
// bidirectional formatting characters); a mime_type parses as a media
// type. field is the list's path, e.g. "payload.context_files".
func validateContextFiles(files []ContextFile, field string) *Error {
	total := 0
	for i, f := range files {
		at := fmt.Sprintf("%s[%d].", field, i)
		if msg := checkFileURL(f.FileURL); msg != "" {
			return errorf(CodeInvalidValue, at+"file_url", "%s", msg)
		}
		if total += len(f.FileURL); total > MaxContextFilesBytes {
			return errorf(CodeInvalidValue, at+"file_url", "the attached files' URLs pass %d KiB together", MaxContextFilesBytes>>10)
		}
		if msg := checkFileName(f.FileName); msg != "" {
			return errorf(CodeInvalidValue, at+"file_name", "%s", msg)
		}
		if f.MimeType != "" {
			if mt, _, err := mime.ParseMediaType(f.MimeType); err != nil || !strings.Contains(mt, "/") {
				return errorf(CodeInvalidValue, at+"mime_type", "not a media type (type/subtype)")
			}
		}
	}
	return nil
}

// checkFileURL returns why raw is not an allowed file_url, or "".
func checkFileURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, ":")
	if !ok {
		return "not an absolute URL: use https: or data:"
	}
	switch strings.ToLower(scheme) {
	case "https":
		u, err := url.Parse(raw)
		switch {
		case err != nil:
			return "not a valid URL"
		case u.Host == "" || u.Opaque != "":
			return "an https URL needs a host"
		case u.User != nil:
			return "the URL carries credentials; give a URL without user or password"
		}
		return ""
	case "data":
		meta, data, ok := strings.Cut(rest, ",")
		if !ok {
			return "a data: URL needs a comma before its content"
		}
		mediaType, isBase64 := strings.CutSuffix(meta, ";base64")
		if mediaType != "" && !strings.HasPrefix(mediaType, ";") {
			if _, _, err := mime.ParseMediaType(mediaType); err != nil {
				return "the data: URL's media type is malformed"
			}
		}
		if isBase64 {
			if _, err := base64.StdEncoding.DecodeString(data); err != nil {
				return "the data: URL's base64 content is malformed"
			}
		} else if _, err := url.PathUnescape(data); err != nil {
			return "the data: URL's content is malformed"
		}
		return ""
	}
	return fmt.Sprintf("the scheme %q is not allowed: use https: or data:", scheme)
}

// checkFileName returns why name is not a bare file name, or "".
func checkFileName(name string) string {
	if strings.TrimSpace(name) == "" || name == "." || name == ".." {
		return "not a file name"
	}
	if strings.ContainsAny(name, `/\`) {
		return "a file name, not a path"
	}
	for _, r := range name {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return "the name has control or bidirectional formatting characters"
		}
	}
	return ""
}
