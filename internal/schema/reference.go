package schema

import (
	"fmt"
	"strings"
)

// Reference returns the Markdown table of every key under fs (Rows): key,
// type, default, unit, whether it is an axis, meaning.
func Reference(fs []Field) string {
	var b strings.Builder
	b.WriteString("| key | type | default | unit | axis | meaning |\n|---|---|---|---|---|---|\n")
	for _, r := range Rows(fs) {
		i := r.Info
		def := i.Default
		if i.Auto != "" {
			def = i.Auto
		}
		if !i.HasDefault && def == "" {
			def = "unset"
		}
		switch i.Section {
		case "mapping":
			def = ""
		case "optional":
			def = "off"
		}
		if i.Required {
			def = "required"
		}
		axis := ""
		if i.Axis && i.Section == "" {
			axis = "yes"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", r.Path, cell(i.Type), code(def), cell(i.Unit), axis, cell(i.Doc))
	}
	return b.String()
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func code(s string) string {
	if s == "" || s == "unset" || s == "required" || s == "off" || strings.Contains(s, " ") && !strings.HasPrefix(s, "[") {
		return cell(s)
	}
	return "`" + cell(s) + "`"
}
