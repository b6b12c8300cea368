/**
 * Streaming to people: a run's events as Server-Sent Events and back.
 *
 * @since 0.2.0
 */
export * as EventStream from "./EventStream.ts"
