/**
 * The OpenAI Responses API provider for agentloop.
 *
 * @since 0.1.0
 */
export * as Responses from "./Responses.ts"
export * as ResponsesCitation from "./ResponsesCitation.ts"
export * as ResponsesDecoder from "./ResponsesDecoder.ts"
export * as ResponsesError from "./ResponsesError.ts"
export * as ResponsesEvent from "./ResponsesEvent.ts"
export * as ResponsesRequest from "./ResponsesRequest.ts"
