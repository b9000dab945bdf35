package cli

import "errors"

// PLACEHOLDER: replaced by the real implementations.

type ContextCmd struct {
	ID     string `arg:""`
	Window int    `default:"200000"`
}

func (c *ContextCmd) Run(e *Env) error { return errors.New("not yet") }

type ExportHTMLCmd struct {
	ID      string  `arg:""`
	From    *uint64 ``
	Through *uint64 ``
	Output  string  `required:""`
}

func (c *ExportHTMLCmd) Run(e *Env) error { return errors.New("not yet") }

type SearchCmd struct {
	Query   []string `arg:""`
	Session string   ``
	Limit   int      `default:"40"`
}

func (c *SearchCmd) Run(e *Env) error { return errors.New("not yet") }
