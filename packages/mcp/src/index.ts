/**
 * `@agentloop/mcp`: MCP servers' tools as agentloop toolkits, and toolkits as MCP servers.
 *
 * @since 0.2.0
 */
export * as Mcp from "./Mcp.ts"
export * as McpArguments from "./McpArguments.ts"
export * as McpConnection from "./McpConnection.ts"
export * as McpResult from "./McpResult.ts"
export * as McpServe from "./McpServe.ts"
export * as McpToolkit from "./McpToolkit.ts"
