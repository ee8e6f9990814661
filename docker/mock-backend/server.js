#!/usr/bin/env node
'use strict';
/**
 * A tiny OpenAI-compatible backend for trying Switchboard without a GPU: the compose file runs a
 * worker daemon in front of it. No dependencies (node:http only), so it also runs outside Docker:
 *
 *   PORT=8000 MODELS=mock-llama,mock-embed node docker/mock-backend/server.js
 *
 * It answers:
 *   GET  /health                  200 {"status":"ok"}
 *   GET  /v1/models               the MODELS list
 *   POST /v1/chat/completions     an echo of the last user message, streamed (SSE, usage in the
 *                                 final chunk) or not; REPLY_DELAY_MS between chunks
 *   POST /v1/completions          the same for a prompt
 *   POST /v1/embeddings           a small deterministic vector per input
 * A body without `model` gets 400 (so the worker's endpoint probes see the routes); an unknown
 * model 404 with an OpenAI-style error; anything else 404 {"error":"not found"}.
 *
 * Environment: HOST (default 127.0.0.1; 0.0.0.0 in the container), PORT (8000),
 * MODELS (comma-separated, default mock-llama), REPLY_DELAY_MS (20).
 */
const http = require('node:http');

const HOST = process.env.HOST || '127.0.0.1';
const PORT = Number(process.env.PORT || 8000);
const MODELS = (process.env.MODELS || 'mock-llama')
  .split(',')
  .map((m) => m.trim())
  .filter(Boolean);
const REPLY_DELAY_MS = Number(process.env.REPLY_DELAY_MS || 20);
const CREATED = Math.floor(Date.now() / 1000);
let sequence = 0;

function send(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function openAiError(res, status, message, type, code) {
  send(res, status, { error: { message, type, param: null, code } });
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d) => (body += d));
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Rough token count: words and punctuation. */
const countTokens = (text) => (String(text).match(/\w+|[^\s\w]/g) || []).length;

function lastUserText(messages) {
  if (!Array.isArray(messages)) return '';
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m && m.role === 'user') {
      if (typeof m.content === 'string') return m.content;
      if (Array.isArray(m.content)) return m.content.map((p) => (p && typeof p.text === 'string' ? p.text : '')).join(' ');
    }
  }
  return '';
}

function replyWords(input) {
  const said = input.trim() === '' ? 'nothing' : input.trim().slice(0, 200);
  return `This is the mock backend. You said: ${said}`.split(/(?<= )/);
}

async function completion(req, res, body, kind) {
  const id = `${kind === 'chat' ? 'chatcmpl' : 'cmpl'}-mock-${++sequence}`;
  const input = kind === 'chat' ? lastUserText(body.messages) : String(body.prompt ?? '');
  const words = replyWords(input);
  const maxTokens = Number.isInteger(body.max_tokens) && body.max_tokens > 0 ? body.max_tokens : words.length;
  const out = words.slice(0, maxTokens);
  const usage = { prompt_tokens: countTokens(input), completion_tokens: out.length, total_tokens: countTokens(input) + out.length };
  const finish = out.length < words.length ? 'length' : 'stop';
  const object = kind === 'chat' ? 'chat.completion' : 'text_completion';

  if (!body.stream) {
    await sleep(REPLY_DELAY_MS);
    const text = out.join('');
    const choice =
      kind === 'chat' ? { index: 0, message: { role: 'assistant', content: text }, finish_reason: finish } : { index: 0, text, finish_reason: finish };
    return send(res, 200, { id, object, created: CREATED, model: body.model, choices: [choice], usage });
  }

  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  let aborted = false;
  res.on('close', () => (aborted = true));
  const chunkObject = kind === 'chat' ? 'chat.completion.chunk' : 'text_completion';
  const event = (choices, extra = {}) => `data: ${JSON.stringify({ id, object: chunkObject, created: CREATED, model: body.model, choices, ...extra })}\n\n`;
  if (kind === 'chat') res.write(event([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]));
  for (const word of out) {
    await sleep(REPLY_DELAY_MS);
    if (aborted) return;
    res.write(event([kind === 'chat' ? { index: 0, delta: { content: word }, finish_reason: null } : { index: 0, text: word, finish_reason: null }]));
  }
  res.write(event([kind === 'chat' ? { index: 0, delta: {}, finish_reason: finish } : { index: 0, text: '', finish_reason: finish }], { usage }));
  res.end('data: [DONE]\n\n');
}

function embeddings(res, body) {
  const inputs = Array.isArray(body.input) ? body.input : [body.input ?? ''];
  const data = inputs.map((text, index) => {
    const s = String(text);
    const vector = Array.from({ length: 8 }, (_, i) => {
      let h = i + 1;
      for (const c of s) h = (h * 31 + c.charCodeAt(0)) % 1000;
      return h / 1000;
    });
    return { object: 'embedding', index, embedding: vector };
  });
  const tokens = inputs.reduce((n, t) => n + countTokens(t), 0);
  send(res, 200, { object: 'list', data, model: body.model, usage: { prompt_tokens: tokens, total_tokens: tokens } });
}

const ROUTES = {
  '/v1/chat/completions': (req, res, body) => completion(req, res, body, 'chat'),
  '/v1/completions': (req, res, body) => completion(req, res, body, 'text'),
  '/v1/embeddings': (req, res, body) => embeddings(res, body),
};

const server = http.createServer(async (req, res) => {
  try {
    const path = (req.url || '/').split('?')[0];
    if (req.method === 'GET' && path === '/health') return send(res, 200, { status: 'ok' });
    if (req.method === 'GET' && path === '/v1/models') {
      return send(res, 200, { object: 'list', data: MODELS.map((id) => ({ id, object: 'model', created: CREATED, owned_by: 'mock-backend' })) });
    }
    const route = req.method === 'POST' ? ROUTES[path] : undefined;
    if (!route) return send(res, 404, { error: 'not found' });
    let body;
    try {
      body = JSON.parse(await readBody(req));
    } catch {
      return openAiError(res, 400, 'the body is not valid JSON', 'invalid_request_error', null);
    }
    if (!body || typeof body !== 'object' || typeof body.model !== 'string' || body.model === '') {
      return openAiError(res, 400, 'model is required', 'invalid_request_error', null);
    }
    if (!MODELS.includes(body.model)) {
      return openAiError(res, 404, `The model '${body.model}' does not exist`, 'invalid_request_error', 'model_not_found');
    }
    await route(req, res, body);
  } catch (e) {
    if (!res.headersSent) openAiError(res, 500, 'mock backend failure', 'server_error', null);
    else res.destroy();
    process.stderr.write(`mock-backend: ${e && e.stack ? e.stack : e}\n`);
  }
});

server.listen(PORT, HOST, () => {
  const address = server.address();
  process.stdout.write(`mock-backend: listening on ${HOST}:${address.port}, models ${MODELS.join(', ')}\n`);
});

function stop() {
  server.close(() => process.exit(0));
  server.closeAllConnections();
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
