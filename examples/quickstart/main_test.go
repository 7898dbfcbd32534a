package main

import (
	"os"
	"strings"
	"testing"
)

// Example runs the program: it must print the doubled floats.
func Example() {
	main()
	// Output: 0 2 510 2046
}

// TestREADMEQuotesProgram checks that README.md's example is this
// program, byte for byte, in a fenced go block, so that the README's
// program is the one Example compiles and runs.
func TestREADMEQuotesProgram(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	block := "```go\n" + string(src) + "```\n"
	if !strings.Contains(string(readme), block) {
		t.Fatalf("README.md does not quote examples/quickstart/main.go whole in a ```go block; copy the file into it")
	}
}
