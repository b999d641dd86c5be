package master

import "strings"

// A UI token made by signing in names its device, for ferry token list.
// The name is built only from the words below, matched in the sign-in's
// User-Agent: whatever the header holds (control or bidi characters, 10 KB
// of text), nothing of it is stored or shown.

// uaWord is a fixed name and the User-Agent markers that mean it.
type uaWord struct {
	name    string
	markers []string
}

// uaBrowsers is checked in order: most browsers also say "Chrome/" or
// "Safari/", so the more specific come first.
var uaBrowsers = []uaWord{
	{"Edge", []string{"Edg/", "EdgA/", "EdgiOS/"}},
	{"Opera", []string{"OPR/", "Opera"}},
	{"Samsung Internet", []string{"SamsungBrowser/"}},
	{"Firefox", []string{"Firefox/", "FxiOS/"}},
	{"Chrome", []string{"CriOS/", "Chrome/", "Chromium/"}},
	{"Safari", []string{"Safari/"}},
}

// uaSystems is checked in order: Android and ChromeOS also say "Linux",
// an iPhone says "like Mac OS X".
var uaSystems = []uaWord{
	{"iPhone", []string{"iPhone"}},
	{"iPad", []string{"iPad"}},
	{"Android", []string{"Android"}},
	{"ChromeOS", []string{"CrOS"}},
	{"Windows", []string{"Windows"}},
	{"macOS", []string{"Macintosh", "Mac OS X"}},
	{"Linux", []string{"Linux", "X11"}},
}

func uaMatch(ua string, words []uaWord) string {
	for _, w := range words {
		for _, m := range w.markers {
			if strings.Contains(ua, m) {
				return w.name
			}
		}
	}
	return ""
}

// DeviceLabel names the device of a User-Agent in a few fixed words:
// "Chrome on Android", "Safari on iPhone", "Firefox on Linux"; "a browser"
// when it names none ferry knows.
func DeviceLabel(ua string) string {
	browser, system := uaMatch(ua, uaBrowsers), uaMatch(ua, uaSystems)
	switch {
	case browser != "" && system != "":
		return browser + " on " + system
	case browser != "":
		return browser
	case system != "":
		return "a browser on " + system
	}
	return "a browser"
}
