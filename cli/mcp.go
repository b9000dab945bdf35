package cli

// McpCmd is `rook mcp`: the inbox server AI clients run, and their setup.
type McpCmd struct {
	Serve     McpServeCmd     `cmd:"" help:"Speak MCP over stdio: AI clients save notes to their rook inbox (append_to_inbox)."`
	Install   McpInstallCmd   `cmd:"" help:"Point an AI client (claude-code, codex, gemini, cursor, claude-desktop) at rook's MCP server."`
	Uninstall McpUninstallCmd `cmd:"" help:"Remove rook's entry from an AI client's MCP configuration."`
}
