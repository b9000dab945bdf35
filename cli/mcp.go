package cli

// McpCmd is `rook mcp`: the inbox server AI clients run and its setup, and
// the MCP servers rook itself calls.
type McpCmd struct {
	Serve     McpServeCmd     `cmd:"" help:"Speak MCP over stdio: AI clients save notes to their rook inbox (append_to_inbox)."`
	Install   McpInstallCmd   `cmd:"" help:"Point an AI client (claude-code, codex, gemini, cursor, claude-desktop) at rook's MCP server."`
	Uninstall McpUninstallCmd `cmd:"" help:"Remove rook's entry from an AI client's MCP configuration."`

	Add   McpAddCmd   `cmd:"" help:"Add an MCP server to call (--url for streamable HTTP, --command for stdio); reads its tools at once."`
	Ls    McpLsCmd    `cmd:"" help:"The MCP servers: transport, status, tools on/total, last sync, last error."`
	Tools McpToolsCmd `cmd:"" help:"A server's tools: descriptions (the server's words), arguments, claims and settings."`
	Sync  McpSyncCmd  `cmd:"" help:"Read a server's tools again: settings survive, new tools arrive off, missing ones are marked. A read-only setting that was only the server's claim goes off when the claim is withdrawn; one you set stays, and so does one saved by an older rook, which did not record who set it (named, to check), unless the server now says the tool writes."`
	Set   McpSetCmd   `cmd:"" help:"A tool's settings: --on/--off, --read-only/--no-read-only, --approval/--no-approval."`
	Limit McpLimitCmd `cmd:"" help:"How many of a server's tools may be on at once (default 16)."`
	Call  McpCallCmd  `cmd:"" help:"Call a tool (JSON arguments); the call and its result are recorded in the server's session."`
	Rm    McpRmCmd    `cmd:"" help:"Remove a server (its recorded calls stay)."`
}
