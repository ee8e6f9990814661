'use strict';
// The request sequences of bench/routing.js: deterministic, so every run asks for the same models.

/** Deterministic PRNG (mulberry32), so every run asks for the same model sequence. */
function prng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The request sequence: `count` picks, uniformly at random (fixed seed), among `requests`. */
function spread(requests, count) {
  if (requests.length === 1) return requests;
  const rnd = prng(42);
  return Array.from({ length: count }, () => requests[Math.floor(rnd() * requests.length)]);
}

module.exports = { prng, spread };
