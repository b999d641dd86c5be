package forge

import "strings"

// TokenVars are the environment variables a GitHub token is read from, in
// order: ferry's own first, then the ones gh and GitHub Actions set.
var TokenVars = []string{"FERRY_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"}

// TokenFromEnv returns the GitHub token from the first of TokenVars that
// is set and not blank, and the name of that variable (for messages: show
// the name, never the token). getenv is os.Getenv outside tests.
func TokenFromEnv(getenv func(string) string) (token, source string, err error) {
	for _, name := range TokenVars {
		if t := strings.TrimSpace(getenv(name)); t != "" {
			return t, name, nil
		}
	}
	return "", "", errorf(CodeNoToken, "no GitHub token: set %s (or %s) to a token that may write pull requests", TokenVars[0], strings.Join(TokenVars[1:], " or "))
}
