// What the views share: the crumbs in the header, the error page, links to
// a session and a run, and a run's state badge.

import { h } from './dom.js';

// Shows where the page is: items { text, href } from the top; the last
// one (without href) is the page itself.
export function setCrumbs(...items) {
  const nav = document.querySelector('[data-crumbs]');
  if (!nav) return;
  nav.replaceChildren(...items.map((it, i) => [
    i ? h('span', { class: 'sep', 'aria-hidden': 'true' }, '›') : null,
    it.href ? h('a', { href: it.href }, it.text) : h('span', { class: 'here' }, it.text),
  ]).flat().filter(Boolean));
}

// Replaces the view with an error page saying `message`.
export function errorBox(ctx, message) {
  ctx.main.replaceChildren(h('div', { class: 'error-page', 'data-error': '' }, h('h2', null, message),
    h('p', null, h('a', { href: '#/' }, 'Back to the sessions'))));
}

// What a failed load of `what` "id" says (ApiError `e`).
export function notFoundMessage(e, what, id) {
  if (e.status === 404) return `${what} "${id}" not found`;
  return `${what} "${id}": ${e.message}`;
}

// Where a session's runs and a run are shown.
export const sessionHref = (name) => `#/session/${encodeURIComponent(name)}`;
export const runHref = (id) => `#/run/${encodeURIComponent(id)}`;

// A run's state (active, ended, failed) as a badge.
export function stateBadge(state) {
  return h('span', { class: `badge state-${state}`, 'data-status': state }, state);
}
