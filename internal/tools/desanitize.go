package tools

import "strings"

// desanitizations undoes what the model's own transport may do to text that
// looks like its control markup: when old_string is not found as given, Edit
// retries with these replacements applied to old_string, and applies the
// same ones (only those that changed old_string) to new_string. It is the
// table Claude Code uses, in its order.
var desanitizations = [][2]string{
	{"<fnr>", "<function_results>"},
	{"<n>", "<name>"},
	{"</n>", "</name>"},
	{"<o>", "<output>"},
	{"</o>", "</output>"},
	{"<e>", "<error>"},
	{"</e>", "</error>"},
	{"<s>", "<system>"},
	{"</s>", "</system>"},
	{"<r>", "<result>"},
	{"</r>", "</result>"},
	{"< META_START >", "<META_START>"},
	{"< META_END >", "<META_END>"},
	{"< EOT >", "<EOT>"},
	{"< META >", "<META>"},
	{"< SOS >", "<SOS>"},
	{"\n\nH:", "\n\nHuman:"},
	{"\n\nA:", "\n\nAssistant:"},
}

// desanitize applies the table to old and the same replacements to new. ok
// is false when old holds none of the sanitised forms.
func desanitize(old, new string) (dOld, dNew string, ok bool) {
	dOld, dNew = old, new
	for _, r := range desanitizations {
		if strings.Contains(dOld, r[0]) {
			dOld = strings.ReplaceAll(dOld, r[0], r[1])
			dNew = strings.ReplaceAll(dNew, r[0], r[1])
			ok = true
		}
	}
	return dOld, dNew, ok
}
