// Command rook is the memory of an AI agent: an event-sourced store of every
// session it runs, and the tools to inspect it. All the work is in cli/.
package main

import (
	"os"

	"github.com/rookhq/rook/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
