// Making the page's elements: (tag, attributes, children) in, an element
// out; strings among the children become text nodes. There is deliberately
// no way to pass markup: every text that comes from a recording reaches the
// page as a text node (createTextNode here, textContent elsewhere), never
// parsed as HTML. Keep it so.

const SVGNS = 'http://www.w3.org/2000/svg';

// `el` with `attrs` set (`on`: event listeners by type; false, null and
// undefined values left out) and `children` appended.
function build(el, attrs, children) {
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'on') {
        for (const [type, fn] of Object.entries(v)) el.addEventListener(type, fn);
      } else {
        el.setAttribute(k, v === true ? '' : String(v));
      }
    }
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
  }
  return el;
}

// An HTML element.
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

// An SVG element.
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVGNS, tag), attrs, children);
}

// A titled section of a panel (the detail panel, the assertion panel).
export function block(title, attrs, ...children) {
  return h('section', { class: 'block', ...attrs }, h('h4', null, title), ...children);
}

