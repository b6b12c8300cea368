/**
 * The SSE body of a Responses API turn that says `tok0 tok1 …` in `deltas`
 * documented `response.output_text.delta` events, between the events that
 * open the turn and `response.completed` with its usage: what the Responses
 * benchmarks serve on loopback.
 */

const itemId = "msg_bench"

const response = (status: string, extra: Record<string, unknown> = {}) => ({
  id: "resp_bench",
  object: "response",
  status,
  model: "gpt-5-mini",
  output: [],
  ...extra
})

/** The body, and how many SSE events it holds. */
export const make = (deltas: number): { readonly body: Buffer; readonly events: number } => {
  let sequence = 0
  const event = (type: string, fields: Record<string, unknown>) =>
    `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...fields })}\n\n`
  const events = [
    event("response.created", { response: response("in_progress") }),
    event("response.output_item.added", {
      output_index: 0,
      item: { id: itemId, type: "message", status: "in_progress", role: "assistant", content: [] }
    }),
    event("response.content_part.added", {
      item_id: itemId,
      output_index: 0,
      content_index: 0,
      part: { type: "output_text", text: "", annotations: [] }
    })
  ]
  for (let i = 0; i < deltas; i++) {
    events.push(event("response.output_text.delta", {
      item_id: itemId,
      output_index: 0,
      content_index: 0,
      delta: `tok${i % 10} `,
      logprobs: []
    }))
  }
  events.push(event("response.completed", {
    response: response("completed", {
      usage: {
        input_tokens: 12,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: deltas,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: deltas + 12
      }
    })
  }))
  return { body: Buffer.from(events.join("")), events: events.length }
}
