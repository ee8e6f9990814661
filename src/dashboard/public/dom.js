// @ts-check
/**
 * Small DOM helpers. Text from the gateway (worker names, models, error messages) only ever goes
 * into `textContent` and attribute values, never into HTML.
 */
import { areaPath, linePath } from './model.js';

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * Creates an element: `props` are attributes (`class`, `aria-*`, `data-*`, …), children are
 * nodes or text.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, string | boolean | undefined>} [props]
 * @param {Array<Node | string>} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === false) continue;
    el.setAttribute(name, value === true ? '' : value);
  }
  for (const c of children) el.append(c);
  return el;
}

/**
 * Sets text only when it changed (no needless DOM work every poll).
 * @param {Element} el
 * @param {string} text
 */
export function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}

/**
 * @param {Element} el
 * @param {string} name
 * @param {string | null} value null removes it
 */
export function setAttr(el, name, value) {
  if (value === null) {
    if (el.hasAttribute(name)) el.removeAttribute(name);
  } else if (el.getAttribute(name) !== value) el.setAttribute(name, value);
}

/**
 * Keyed list update: rows are created once per key and updated in place, so a focused button or a
 * selection inside a row survives the polls. A removed row holding the focus hands it to `fallback`.
 * @template T
 * @param {Element} parent
 * @param {T[]} items
 * @param {(item: T, index: number) => string} keyOf
 * @param {(item: T) => HTMLElement} create
 * @param {(el: HTMLElement, item: T) => void} update
 * @param {HTMLElement} fallback
 */
export function syncRows(parent, items, keyOf, create, update, fallback) {
  /** @type {Map<string, HTMLElement>} */
  const existing = new Map();
  for (const child of Array.from(parent.children)) {
    if (child instanceof HTMLElement && child.dataset.key !== undefined) existing.set(child.dataset.key, child);
  }
  const keep = new Set();
  /** @type {Element | null} */
  let prev = null;
  items.forEach((item, i) => {
    const key = keyOf(item, i);
    keep.add(key);
    let el = existing.get(key);
    if (!el) {
      el = create(item);
      el.dataset.key = key;
    }
    update(el, item);
    const expected = prev ? prev.nextElementSibling : parent.firstElementChild;
    if (el !== expected) parent.insertBefore(el, expected);
    prev = el;
  });
  for (const [key, el] of existing) {
    if (keep.has(key)) continue;
    const hadFocus = el.contains(document.activeElement);
    el.remove();
    if (hadFocus) fallback.focus();
  }
}

/**
 * @param {HTMLElement} container
 * @param {import('./model.js').Badge[]} badges
 */
export function setBadges(container, badges) {
  const text = badges.map((b) => `${b.tone}:${b.label}:${b.title ?? ''}`).join('|');
  if (container.dataset.badges === text) return;
  container.dataset.badges = text;
  container.replaceChildren(...badges.map((b) => h('span', { class: `badge ${b.tone}`, title: b.title }, b.label)));
}

/**
 * @typedef {{ values: Array<number | null>, className: string, area?: boolean }} Series
 */

/**
 * Draws line series into an existing `<svg viewBox="0 0 W H">`, with faint grid lines; the svg's
 * `aria-label` carries the summary a screen reader reads.
 * @param {SVGSVGElement} svg
 * @param {Series[]} series
 * @param {number} max
 * @param {string} label
 */
export function drawChart(svg, series, max, label) {
  const [, , width, height] = (svg.getAttribute('viewBox') ?? '0 0 300 64').split(/\s+/).map(Number);
  /** @type {SVGElement[]} */
  const nodes = [];
  for (const f of [0.25, 0.5, 0.75]) {
    const y = String(Math.round(height * f * 10) / 10);
    nodes.push(svgEl('line', { class: 'grid', x1: '0', x2: String(width), y1: y, y2: y }));
  }
  for (const s of series) {
    if (s.area) {
      const area = areaPath(s.values, width, height, max);
      if (area) nodes.push(svgEl('path', { class: `area area-${s.className}`, d: area }));
    }
    const d = linePath(s.values, width, height, max);
    if (d) nodes.push(svgEl('path', { class: `line-${s.className}`, d }));
  }
  svg.replaceChildren(...nodes);
  setAttr(svg, 'aria-label', label);
}

/**
 * @param {string} tag
 * @param {Record<string, string>} attrs
 * @returns {SVGElement}
 */
export function svgEl(tag, attrs) {
  const el = /** @type {SVGElement} */ (document.createElementNS(SVG_NS, tag));
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  return el;
}

/** The page element `selector` names (it must exist). @param {string} selector @returns {HTMLElement} */
export function $(selector) {
  const el = document.querySelector(selector);
  if (!(el instanceof HTMLElement)) throw new Error(`missing ${selector}`);
  return el;
}

/** @param {Element} row @param {string} selector @returns {HTMLElement} */
export function cell(row, selector) {
  const el = row.querySelector(selector);
  if (!(el instanceof HTMLElement)) throw new Error(`missing ${selector}`);
  return el;
}

/** @param {Element} row @param {string} selector @returns {HTMLButtonElement} */
export function button(row, selector) {
  const el = row.querySelector(selector);
  if (!(el instanceof HTMLButtonElement)) throw new Error(`missing ${selector}`);
  return el;
}
