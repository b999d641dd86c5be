package protocol

import (
	"encoding/base64"
	"fmt"
	"mime"
	"net/url"
	"strings"
)

// MaxContextFilesBytes caps the file_url bytes of one prompt's
// context_files together: data: URLs carry content inline, and a prompt
// is persisted and relayed, so attachments get a budget of their own well
// inside MaxMessageBytes.
const MaxContextFilesBytes = 256 << 10

// validateContextFiles checks a prompt's context_files the way file
// references are checked: nothing reaches a client that it could be made to
// fetch or show harmfully. A file_url is https with a host and no
// credentials (never file:, http:, a relative path or a script), a
// well-formed data: URL, or an upload stored on the master
// (ferry-upload:upl_<id>, with at most a grant query: see ParseUploadURL); the URLs together stay within
// MaxContextFilesBytes; a file_name is a bare name (no path, no character
// CheckName refuses); a mime_type parses as a media
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
		return "not an absolute URL: use https:, data: or ferry-upload:"
	}
	switch strings.ToLower(scheme) {
	case UploadScheme:
		if _, _, msg := parseUploadURL(rest); msg != "" {
			return msg
		}
		return ""
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
	return fmt.Sprintf("the scheme %q is not allowed: use https:, data: or ferry-upload:", scheme)
}

// UploadScheme is the scheme of a file the user uploaded to the master:
// "ferry-upload:upl_<id>" in a ui.prompt, "ferry-upload:upl_<id>?grant=G"
// once the master has checked it and granted this prompt's client the
// right to fetch it.
const UploadScheme = "ferry-upload"

// UploadIDPrefix starts every upload ID.
const UploadIDPrefix = "upl_"

// Limits of an upload URL's parts; both are far above what the master
// issues, and keep a hostile URL from carrying anything else.
const (
	maxUploadIDLen = 64
	maxGrantLen    = 512
)

// ParseUploadURL splits a ferry-upload URL into its upload ID and grant
// ("" when it has none). ok is false for anything else: another scheme, an
// ID that is not upl_ followed by letters, digits, '-' or '_', or a query
// other than one grant of letters, digits, '-', '_' and '.'.
func ParseUploadURL(raw string) (id, grant string, ok bool) {
	scheme, rest, found := strings.Cut(raw, ":")
	if !found || !strings.EqualFold(scheme, UploadScheme) {
		return "", "", false
	}
	id, grant, msg := parseUploadURL(rest)
	return id, grant, msg == ""
}

// UploadURL is the ferry-upload URL of id, with grant when not "".
func UploadURL(id, grant string) string {
	if grant == "" {
		return UploadScheme + ":" + id
	}
	return UploadScheme + ":" + id + "?grant=" + grant
}

// parseUploadURL parses what follows "ferry-upload:", strictly: no
// percent-encoding, no fragment, no second parameter.
func parseUploadURL(rest string) (id, grant, msg string) {
	id, query, hasQuery := strings.Cut(rest, "?")
	body, hasPrefix := strings.CutPrefix(id, UploadIDPrefix)
	if !hasPrefix || body == "" || len(id) > maxUploadIDLen || !tokenChars(body, false) {
		return "", "", "a ferry-upload URL names an upload as upl_ followed by letters, digits, '-' or '_'"
	}
	if !hasQuery {
		return id, "", ""
	}
	grant, isGrant := strings.CutPrefix(query, "grant=")
	if !isGrant || grant == "" || len(grant) > maxGrantLen || !tokenChars(grant, true) {
		return "", "", "a ferry-upload URL takes only a grant=… query (letters, digits, '-', '_', '.')"
	}
	return id, grant, ""
}

// tokenChars reports whether s is only ASCII letters, digits, '-', '_' and,
// when dot, '.'.
func tokenChars(s string, dot bool) bool {
	for i := range len(s) {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		case c == '.' && dot:
		default:
			return false
		}
	}
	return true
}

// checkFileName returns why name is not a bare file name, or "".
func checkFileName(name string) string {
	if strings.TrimSpace(name) == "" || name == "." || name == ".." {
		return "not a file name"
	}
	if strings.ContainsAny(name, `/\`) {
		return "a file name, not a path"
	}
	if e := CheckName("", name); e != nil {
		return e.Message
	}
	return ""
}

// CheckFileName returns why name is not a bare file name (no path, no
// character CheckName refuses), or "": the check a context_files
// file_name passes, for the master's uploads to share.
func CheckFileName(name string) string { return checkFileName(name) }
