'use strict';
// The fake OpenAI-compatible backend of the benchmarks (instant answers, so the gateway's own cost
// dominates) and the request bodies sent to it. Used by bench/run.js (relay part) and bench/cluster.js.
const http = require('node:http');

const COMPLETION = JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion',
  created: 1,
  model: 'bench',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hello from the bench backend' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 5, completion_tokens: 6, total_tokens: 11 },
});
const chunk = (i) =>
  `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'bench', choices: [{ index: 0, delta: { content: `tok${i} ` }, finish_reason: null }] })}\n\n`;
const chatBody = (model, stream) => JSON.stringify({ model, stream, messages: [{ role: 'user', content: 'hi' }] });
// The same prompt in the Responses API: the bench backend serves only chat completions, so the gateway translates it.
const responsesBody = (model, stream) => JSON.stringify({ model, stream, input: 'hi' });

/** Listens on a free loopback port; `chunks` SSE chunks per streamed answer; GET /v1/models lists `models`. */
function startBackend({ chunks, models = ['bench'] }) {
  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/v1/models') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ object: 'list', data: models.map((id) => ({ id, object: 'model' })) }));
    }
    // The worker daemon probes its backend at start (GET /props, /version, POST {} to each
    // endpoint): answer like an OpenAI-compatible server that has no such extras.
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      res.writeHead(404, { 'content-type': 'application/json' });
      return res.end('{"error":"not found"}');
    }
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      let parsed;
      try {
        parsed = JSON.parse(body);
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' });
        return res.end('{"error":"bad json"}');
      }
      if (!parsed.model) {
        res.writeHead(400, { 'content-type': 'application/json' });
        return res.end('{"error":"model is required"}');
      }
      if (parsed.stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (let i = 0; i < chunks; i++) res.write(chunk(i));
        return res.end('data: [DONE]\n\n');
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(COMPLETION);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

module.exports = { startBackend, chatBody, responsesBody };
