package cli

import "errors"

// PLACEHOLDER: replaced by the real implementations.

type ShowCmd struct {
	ID      string `arg:""`
	From    uint64 `help:"First seq." default:"0"`
	Limit   int    `help:"At most N events." default:"200"`
	MaxBody int    `name:"max-body" help:"Elide bodies longer than B bytes." default:"4096"`
}

func (c *ShowCmd) Run(e *Env) error { return errors.New("not yet") }

type HistoryCmd struct {
	ID     string  `arg:""`
	Before *uint64 `help:"The page before seq N (exclusive)."`
	From   *uint64 `help:"The page from seq N (inclusive)."`
	Limit  int     `default:"64"`
}

func (c *HistoryCmd) Run(e *Env) error { return errors.New("not yet") }

type FindCmd struct {
	ID      string  `arg:""`
	Query   string  `arg:""`
	From    uint64  `default:"0"`
	Offset  int64   `default:"0"`
	Through *uint64 ``
}

func (c *FindCmd) Run(e *Env) error { return errors.New("not yet") }

type EntryCmd struct {
	ID     string `arg:""`
	Seq    uint64 `arg:""`
	Offset int64  `default:"0"`
}

func (c *EntryCmd) Run(e *Env) error { return errors.New("not yet") }

type QuoteCmd struct {
	ID     string `arg:""`
	Seq    uint64 `arg:""`
	Offset int64  `default:"0"`
}

func (c *QuoteCmd) Run(e *Env) error { return errors.New("not yet") }
