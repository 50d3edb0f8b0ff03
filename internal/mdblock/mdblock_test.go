package mdblock

import (
	"slices"
	"testing"
)

func TestFenced(t *testing.T) {
	text := "intro\n```sh\ncd x\nmake\n```\n\n```go\nfmt.Println()\n```\n  ```sh\nindented\n  ```\n```sh\nnever closed\n"
	if got, want := Fenced(text, "sh"), []string{"cd x\nmake\n", "indented\n"}; !slices.Equal(got, want) {
		t.Errorf("Fenced(sh) = %q, want %q", got, want)
	}
	if got, want := Fenced(text, "go"), []string{"fmt.Println()\n"}; !slices.Equal(got, want) {
		t.Errorf("Fenced(go) = %q, want %q", got, want)
	}
}
