/**
 * The chat page: a conversation, a box to ask in, Send, Stop and New chat.
 */

/** The page's HTML; `provider` is shown in its header, `question` pre-filled in the box. */
export const page = (provider: string, question: string): string =>
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>agentloop · chat</title>
<style>
  :root { font-family: system-ui, sans-serif; color: #1d1d1f; background: #f5f5f7; }
  body { max-width: 46rem; margin: 0 auto; padding: 1.5rem; }
  header { display: flex; justify-content: space-between; align-items: baseline; }
  h1 { font-size: 1.2rem; margin: 0; }
  .provider { color: #6e6e73; font-size: .85rem; }
  #log { display: flex; flex-direction: column; gap: .75rem; margin: 1.25rem 0; }
  .user { align-self: flex-end; background: #0071e3; color: white; padding: .55rem .85rem; border-radius: 1rem; max-width: 80%; }
  .assistant { background: white; border-radius: .8rem; padding: .75rem 1rem; box-shadow: 0 1px 2px #0002; }
  .turn + .turn { border-top: 1px solid #e5e5ea; margin-top: .6rem; padding-top: .6rem; }
  .text { white-space: pre-wrap; line-height: 1.45; }
  .call, .result, .meta, .ending { font-size: .82rem; font-family: ui-monospace, monospace; margin-top: .35rem; }
  .call { color: #6e6e73; }
  .result.success { color: #1a7f37; }
  .result.mistake, .ending.failed { color: #c9252d; }
  .meta { color: #8e8e93; }
  .ending { font-weight: 600; }
  form { display: flex; gap: .5rem; }
  input { flex: 1; font: inherit; padding: .55rem .75rem; border: 1px solid #d2d2d7; border-radius: .6rem; }
  button { font: inherit; padding: .55rem 1rem; border: 0; border-radius: .6rem; background: #0071e3; color: white; cursor: pointer; }
  button#stop { background: #c9252d; }
  button#new { background: #6e6e73; }
  button:disabled { opacity: .4; cursor: default; }
  #status { color: #6e6e73; font-size: .85rem; margin-top: .5rem; }
</style>
</head>
<body>
<header><h1>agentloop chat</h1><span class="provider">provider: ${escape(provider)}</span></header>
<main id="log"></main>
<form id="ask">
  <input id="message" name="message" autocomplete="off" value="${escape(question)}">
  <button id="send" type="submit">Send</button>
  <button id="stop" type="button" disabled>Stop</button>
  <button id="new" type="button">New chat</button>
</form>
<div id="status" data-state="idle">idle</div>
<script type="module" src="/client.js"></script>
</body>
</html>
`

const escape = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" })[c] ?? c)
