/**
 * Streaming to people: a run's events as Server-Sent Events and back, and as
 * the AI SDK's UI message stream.
 *
 * @since 0.2.0
 */
export * as ChatApprovals from "./ChatApprovals.ts"
export * as EventStream from "./EventStream.ts"
export * as EventStreamClient from "./EventStreamClient.ts"
export * as LiveRuns from "./LiveRuns.ts"
export * as Reporter from "./Reporter.ts"
export * as ResumableStream from "./ResumableStream.ts"
export * as RunCursor from "./RunCursor.ts"
export * as UIMessage from "./UIMessage.ts"
export * as UIMessageChunk from "./UIMessageChunk.ts"
export * as UIMessageStream from "./UIMessageStream.ts"
