/**
 * MCP for agentloop: an MCP server's tools as a `Toolkit` ({@link toolkit}
 * over {@link stdio} or {@link http}), and a `Toolkit` as an MCP server
 * ({@link serve} on {@link layerServerStdio} or {@link layerServerHttp}).
 *
 * @since 0.2.0
 */
export { type Http, http, type Requirements, type Server, type Stdio, stdio } from "./McpConnection.ts"
export { type Info, layerServerHttp, layerServerStdio, serve } from "./McpServe.ts"
export { McpToolError, type Options, toolkit } from "./McpToolkit.ts"
