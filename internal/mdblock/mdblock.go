// Package mdblock reads the fenced code blocks of the project's markdown
// docs, for the tests that build, run or quote what the docs show
// (README.md, docs/*.md).
package mdblock

import "strings"

// Fenced returns the blocks of text fenced as lang (```lang ... ```),
// each with its lines as written and the fences left out.
func Fenced(text, lang string) []string {
	var blocks, block []string
	in := false
	for line := range strings.Lines(text) {
		switch {
		case !in && strings.TrimSpace(line) == "```"+lang:
			in, block = true, nil
		case in && strings.TrimSpace(line) == "```":
			in = false
			blocks = append(blocks, strings.Join(block, ""))
		case in:
			block = append(block, line)
		}
	}
	return blocks
}
