// The sequence diagram of a run: a lane for the test, each agent, the model
// and the tools; a row per event, in answer order (seq order, but a model
// call before what its answer caused: model.js, answerPosition), drawn as
// an arrow between two lanes or a mark on one (model.js: shapeOf). And its
// legend.

import { h, s } from './dom.js';
import { clip, isoMicros, num, offset } from './format.js';
import { agentOf, answerPosition, lanesFor, shapeOf, turnsOf } from './model.js';

const GUTTER = 92;
const LANE_W = 168;
const MIN_LANE_W = 90;
const MAX_LANE_W = 230;
const HEAD_H = 40;
const TOP = HEAD_H + 12;
const CHAR_W = 6.3; // 11.5px system sans-serif, on average
// Classes that mark a row (select, a failed check, the first divergence);
// a row drawn again keeps them.
const ROW_MARKS = ['selected', 'failed-check', 'divergence'];

function rowHeight(sh) {
  if (sh.type === 'call') return sh.back ? 44 : 30;
  return 26;
}

// The width in pixels of a lane's name as its head shows it (.lane-name:
// 600 12px in the page's font).
let measurer = null;
function nameWidth(text) {
  if (!measurer) {
    measurer = document.createElement('canvas').getContext('2d');
    measurer.font = `600 12px ${getComputedStyle(document.documentElement).fontFamily}`;
  }
  return measurer.measureText(text).width;
}

// `name`, cut with an ellipsis where it is wider than `width` pixels.
function fitName(name, width) {
  let n = name.length;
  while (n > 2 && nameWidth(clip(name, n)) > width) n--;
  return clip(name, n);
}

// A run's diagram in `el`: its scroll box `wrap` (lane heads that stay in
// view, the rows below) and, under it, a count of the rows out of sight
// below (the box's fold or the window's, whichever is higher) that stays
// at the window's bottom edge while the box goes on below it, and scrolls
// the box on when clicked. draw() lays it out, append() adds events as
// they come.
export class Diagram {
  // onSelect(ev) is called when an event is clicked or activated by key.
  // width: the room it has, in pixels; lanes share it, each as wide as its
  // name needs (layoutLanes). signal: aborts when the diagram is gone (it
  // stops following the window's scrolling then).
  constructor({ onSelect, width = 0, signal } = {}) {
    this.onSelect = onSelect;
    this.room = width;
    this.laneW = new Map(); // lane → its width
    this.laneX = new Map(); // lane → the x of its lifeline
    this.lanesRight = GUTTER;
    this.events = []; // as drawn, top to bottom
    this.bySeq = new Map(); // seq → event
    this.rowOf = new Map(); // seq → { g, start, top, height } (start: above its gap)
    this.turns = new Map(); // seq of an agent_execution → the agent's turn number
    this.turnCounts = new Map();
    this.gaps = new Map();
    this.lanes = [];
    this.y = TOP;
    this.t0 = 0;
    this.wrap = h('div', { class: 'diagram-scroll', 'data-scroll': '' });
    this.svg = s('svg', { 'data-diagram': '', class: 'diagram', role: 'img', 'aria-label': 'sequence diagram of the run' });
    this.heads = s('svg', { class: 'lane-heads', 'aria-hidden': 'true' });
    this.wrap.append(this.heads, this.svg);
    this.more = h('button', {
      type: 'button', class: 'more-below', 'data-more-below': '', hidden: true,
      on: { click: () => { this.wrap.scrollTop += Math.max(40, this.seen() - HEAD_H - 44); } },
    });
    this.el = h('div', { class: 'diagram-frame' }, this.wrap, this.more);
    this.hintPending = false;
    const hint = () => this.hintSoon();
    this.wrap.addEventListener('scroll', hint, { passive: true });
    window.addEventListener('scroll', hint, { passive: true, signal });
    window.addEventListener('resize', hint, { passive: true, signal });
    new ResizeObserver(hint).observe(this.wrap);
    const activate = (e) => {
      const g = e.target.closest && e.target.closest('g[data-event-seq]');
      if (!g || !this.svg.contains(g)) return;
      if (e.type === 'keydown' && e.key !== 'Enter' && e.key !== ' ') return;
      e.preventDefault();
      const ev = this.bySeq.get(Number(g.dataset.eventSeq));
      if (ev) this.onSelect && this.onSelect(ev);
    };
    this.svg.addEventListener('click', activate);
    this.svg.addEventListener('keydown', activate);
  }

  x(lane) {
    return this.laneX.get(lane) ?? GUTTER;
  }

  width() {
    return this.lanesRight + 8;
  }

  // Lays the lanes out: each at least as wide as its name needs (within
  // MIN_LANE_W and MAX_LANE_W). They share the room evenly when the widest
  // name fits in an even share; otherwise each gets its need and an even
  // part of what is left, and the box scrolls sideways when even that is
  // too much.
  layoutLanes(lanes) {
    const n = lanes.length;
    const need = lanes.map((l) => Math.min(MAX_LANE_W, Math.max(MIN_LANE_W, Math.ceil(nameWidth(l)) + 20)));
    const room = this.room ? this.room - GUTTER - 10 : n * LANE_W;
    let widths;
    if (Math.max(...need) * n <= room) {
      widths = need.map(() => Math.min(MAX_LANE_W, room / n));
    } else {
      const spare = Math.max(0, room - need.reduce((a, b) => a + b, 0));
      widths = need.map((w) => Math.min(MAX_LANE_W, w + spare / n));
    }
    this.laneW.clear();
    this.laneX.clear();
    let left = GUTTER;
    lanes.forEach((lane, i) => {
      const w = Math.floor(widths[i]);
      this.laneW.set(lane, w);
      this.laneX.set(lane, left + w / 2);
      left += w;
    });
    this.lanesRight = left;
  }

  // Draws `events` (in seq order) from scratch with these lanes (default:
  // their own). `gaps` (seq → pixels) leaves room above those events' rows.
  draw(events, lanes = lanesFor(events), { gaps = new Map() } = {}) {
    this.events = [];
    this.bySeq.clear();
    this.rowOf.clear();
    this.turns.clear();
    this.turnCounts.clear();
    this.gaps = gaps;
    this.lanes = lanes;
    this.layoutLanes(lanes);
    this.y = TOP;
    this.t0 = 0;
    this.svg.replaceChildren();
    this.laneGroup = s('g', { class: 'lanes' });
    this.rows = s('g', { class: 'rows' });
    this.svg.append(this.laneGroup, this.rows);
    this.append(events, { relayout: false });
    this.drawLanes();
  }

  // Adds events (in seq order) after those drawn; redraws when one brings a
  // new lane. A model call answered upstream comes after what its answer
  // caused: those rows are drawn again below it.
  append(events, { relayout = true } = {}) {
    const fresh = events.filter((ev) => !this.bySeq.has(num(ev.seq)));
    if (!fresh.length) return;
    if (relayout) {
      const lanes = lanesFor(this.events, fresh);
      if (lanes.some((l) => !this.lanes.includes(l))) {
        const all = this.events.concat(fresh).sort((p, q) => num(p.seq) - num(q.seq));
        const marks = this.classMarks();
        this.draw(all, lanes, { gaps: this.gaps });
        this.restoreMarks(marks);
        return;
      }
    }
    // Each event to its place in answer order; those placed above rows
    // drawn before (the last ones) have those rows drawn again below them.
    let from = this.events.length;
    if (!this.t0) this.t0 = num(fresh[0].timeMicros);
    turnsOf(fresh, this.turnCounts, this.turns);
    for (const ev of fresh) {
      this.bySeq.set(num(ev.seq), ev);
      const at = answerPosition(ev, this.events);
      this.events.splice(at, 0, ev);
      from = Math.min(from, at);
    }
    const old = new Map();
    for (let i = from; i < this.events.length; i++) {
      const seq = num(this.events[i].seq);
      const row = this.rowOf.get(seq);
      if (!row) continue;
      old.set(seq, row.g);
      row.g.remove();
      this.y = Math.min(this.y, row.start);
    }
    const frag = document.createDocumentFragment();
    for (let i = from; i < this.events.length; i++) {
      const g = this.drawEvent(this.events[i]);
      const was = old.get(num(this.events[i].seq));
      if (was) for (const cls of ROW_MARKS) g.classList.toggle(cls, was.classList.contains(cls));
      frag.appendChild(g);
    }
    this.rows.appendChild(frag);
    this.resize();
  }

  classMarks() {
    const marks = [];
    for (const cls of ROW_MARKS) {
      for (const g of this.svg.querySelectorAll(`g.${cls}`)) marks.push([g.dataset.eventSeq, cls]);
    }
    return marks;
  }

  restoreMarks(marks) {
    for (const [seq, cls] of marks) this.mark(seq, cls, true);
  }

  resize() {
    const height = this.y + 16;
    // No viewBox: changing it would lay every row out again.
    this.svg.setAttribute('width', this.width());
    this.svg.setAttribute('height', height);
    for (const line of this.laneGroup.querySelectorAll('line.lifeline')) line.setAttribute('y2', height);
    this.hintSoon();
  }

  drawLanes() {
    this.laneGroup.replaceChildren();
    this.heads.replaceChildren();
    this.heads.setAttribute('width', this.width());
    this.heads.setAttribute('height', HEAD_H);
    this.heads.append(s('rect', { class: 'heads-bg', x: 0, y: 0, width: this.width(), height: HEAD_H }));
    for (const lane of this.lanes) {
      const x = this.x(lane);
      const w = this.laneW.get(lane);
      const kind = ['test', 'model', 'tools'].includes(lane) ? lane : 'agent';
      const head = () => [
        s('rect', { class: `lane-head lane-${kind}`, x: x - w / 2 + 4, y: 6, width: w - 8, height: HEAD_H - 12, rx: 6 }),
        s('text', { class: 'lane-name', x, y: HEAD_H / 2 + 4, 'text-anchor': 'middle' }, fitName(lane, w - 16)),
      ];
      this.laneGroup.append(s('g', { 'data-lane': lane, class: `lane lane-${kind}` },
        s('title', null, lane === 'test' ? 'test: the run itself and your test’s own events'
          : lane === 'model' ? 'model: what answered the agents (recording, rule, upstream)'
            : lane === 'tools' ? 'tools: the tools the agents called'
              : `agent ${lane}`),
        s('line', { class: 'lifeline', x1: x, x2: x, y1: HEAD_H, y2: this.y + 16 }),
        ...head()));
      this.heads.append(s('g', { class: `lane lane-${kind}` }, ...head()));
    }
    this.resize();
  }

  drawEvent(ev) {
    const seq = num(ev.seq);
    const sh = shapeOf(ev, { turn: this.turns.get(seq) });
    const t = num(ev.timeMicros);
    const start = this.y;
    this.y += this.gaps.get(seq) || 0;
    const y0 = this.y;
    const hgt = rowHeight(sh);
    this.y += hgt;
    const kindCls = `k-${String(ev.kind).replace(/[^a-z0-9_-]/gi, '_')}`;
    const cls = ['ev', kindCls, sh.cls || '', sh.mark ? `mark-${sh.mark}` : ''];
    if (ev.kind === 'miss') cls.push('miss');
    if (sh.badge) cls.push('rule-hit');
    const agent = agentOf(ev);
    const title = `#${seq} ${ev.kind}${agent ? ` · ${agent}` : ''}\n${isoMicros(t)} (${offset(t - this.t0)} after the run started)` +
      (sh.label ? `\n${clip(sh.label, 300)}` : '') + (sh.back ? `\n${clip(sh.back, 300)}` : '') + (sh.note ? `\n${sh.note}` : '');
    const g = s('g', { class: cls.filter(Boolean).join(' '), 'data-event-seq': seq, 'data-kind': ev.kind, tabindex: 0, role: 'button' },
      s('title', null, title),
      s('rect', { class: 'hit', x: 0, y: y0, width: this.width(), height: hgt }),
      s('text', { class: 'seq', x: 8, y: y0 + 15 }, `#${seq}`, s('tspan', { class: 'time', x: GUTTER - 8, 'text-anchor': 'end' }, offset(t - this.t0))));
    if (sh.type === 'call') this.drawCall(g, sh, y0);
    else this.drawMark(g, sh, y0);
    this.rowOf.set(seq, { g, start, top: y0, height: hgt });
    return g;
  }

  drawCall(g, sh, y0) {
    const x1 = this.x(sh.from);
    const x2 = this.x(sh.to);
    const span = Math.abs(x2 - x1);
    const mid = (x1 + x2) / 2;
    // A label may run past its arrow's ends (a row holds one event), as far
    // as it stays centred inside the diagram, or (`right`) left of a point.
    const roomFor = (right) => {
      const free = 2 * Math.min(mid - GUTTER, right - mid);
      return Math.max(8, Math.floor((Math.max(span, free) - 12) / CHAR_W));
    };
    const arrow = (xa, xb, y, dashed, label, cls, right = this.width() - 8) => {
      const dir = xb > xa ? 1 : -1;
      const tip = xb - dir * 3;
      g.append(
        s('line', { class: `arrow ${cls}${dashed ? ' dashed' : ''}`, x1: xa + dir * 3, x2: tip - dir * 7, y1: y, y2: y }),
        s('path', { class: `head ${cls}`, d: `M${tip},${y} l${-dir * 8},-4.5 v9 z` }),
        s('text', { class: `label ${cls}`, x: mid, y: y - 5, 'text-anchor': 'middle' }, clip(label, roomFor(right))));
    };
    const yReq = y0 + 20;
    arrow(x1, x2, yReq, !!sh.dashed, sh.label, sh.cls);
    if (sh.cross) {
      g.append(s('path', { class: 'cross', d: `M${x2 - 6},${yReq - 6} l12,12 m0,-12 l-12,12` }));
    }
    if (sh.back) {
      // The rule badge and name sit right of the model's lane on this line.
      arrow(x2, x1, y0 + 38, true, sh.back, `${sh.cls} answer`, sh.badge ? Math.max(x1, x2) - 4 : undefined);
    }
    if (sh.badge) {
      g.append(s('circle', { class: 'badge', cx: x2 + 14, cy: y0 + 30, r: 8 }),
        s('text', { class: 'badge-text', x: x2 + 14, y: y0 + 34, 'text-anchor': 'middle' }, sh.badge));
      if (sh.rule) {
        const room = Math.floor((this.width() - x2 - 36) / CHAR_W);
        if (room > 4) g.append(s('text', { class: 'label rule-name', x: x2 + 26, y: y0 + 34 }, clip(sh.rule, room)));
      }
    }
  }

  drawMark(g, sh, y0) {
    const x = this.x(sh.lane);
    const y = y0 + 13;
    let shape;
    switch (sh.mark) {
      case 'start': shape = s('circle', { cx: x, cy: y, r: 5 }); break;
      case 'phase': shape = s('path', { d: `M${x},${y - 7} l7,7 l-7,7 l-7,-7 z` }); break;
      case 'route': shape = s('path', { d: `M${x - 6},${y - 6} h7 l6,6 l-6,6 h-7 z` }); break;
      case 'custom': shape = s('path', { d: starPath(x, y, 7, 3) }); break;
      case 'sim': shape = s('rect', { x: x - 5, y: y - 5, width: 10, height: 10, rx: 2 }); break;
      default: shape = s('rect', { x: x - 7, y: y - 4, width: 14, height: 8, rx: 1 });
    }
    shape.setAttribute('class', `mark-shape`);
    const room = Math.max(12, Math.floor((this.width() - x - 16) / CHAR_W));
    g.append(shape, s('text', { class: 'label mark-label', x: x + 11, y: y + 4 }, clip(sh.label, Math.min(room, 70))));
  }

  // Adds (on) or removes a class on the event with this seq; its element.
  mark(seq, cls, on = true) {
    const row = this.rowOf.get(num(seq));
    if (row) row.g.classList.toggle(cls, on);
    return row ? row.g : null;
  }

  clear(cls) {
    for (const g of this.svg.querySelectorAll(`g.${cls}`)) g.classList.remove(cls);
  }

  // Where the event's row starts, in pixels from the diagram's top, or
  // undefined when it is not drawn.
  rowTop(seq) {
    const row = this.rowOf.get(num(seq));
    return row && row.top;
  }

  // Scrolls the box so that the event's row and the row above it are in
  // view below the lane heads (which stay on top and would hide them):
  // not at all when they are, else the event to the middle.
  reveal(seq) {
    const ev = this.bySeq.get(num(seq));
    const row = this.rowOf.get(num(seq));
    if (!row) return;
    const i = this.events.indexOf(ev);
    const above = i > 0 ? this.rowOf.get(num(this.events[i - 1].seq)) : row;
    const w = this.wrap;
    if (above.top >= w.scrollTop + HEAD_H && row.top + row.height <= w.scrollTop + w.clientHeight) return;
    w.scrollTop = Math.max(0, row.top - w.clientHeight / 2);
  }

  atBottom() {
    return this.wrap.scrollTop + this.wrap.clientHeight >= this.wrap.scrollHeight - 40;
  }

  // Counts the rows out of sight below again (updateHint), once per frame
  // at most.
  hintSoon() {
    if (this.hintPending) return;
    this.hintPending = true;
    requestAnimationFrame(() => {
      this.hintPending = false;
      this.updateHint();
    });
  }

  // How much of the box's height is in the window (from its top).
  seen() {
    const top = this.wrap.getBoundingClientRect().top;
    return Math.max(0, Math.min(top + this.wrap.clientHeight, window.innerHeight) - top);
  }

  // Shows how many rows are out of sight below the fold (the box's or the
  // window's), or hides the count when none are.
  updateHint() {
    const fold = this.wrap.scrollTop + this.seen();
    // Rows go down in drawing order: the first not wholly above the fold.
    let lo = 0;
    let hi = this.events.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const row = this.rowOf.get(num(this.events[mid].seq));
      if (row.top + row.height <= fold + 1) lo = mid + 1;
      else hi = mid;
    }
    const below = this.wrap.clientHeight ? this.events.length - lo : 0;
    if (this.more.dataset.moreBelow === String(below)) return;
    this.more.hidden = below === 0;
    this.more.dataset.moreBelow = String(below);
    this.more.textContent = `▼ ${below} more event${below === 1 ? '' : 's'} below — scroll the diagram, or click here`;
  }
}

function starPath(cx, cy, ro, ri) {
  let d = '';
  for (let i = 0; i < 10; i++) {
    const r = i % 2 ? ri : ro;
    const a = (Math.PI / 5) * i - Math.PI / 2;
    d += `${i ? 'L' : 'M'}${(cx + r * Math.cos(a)).toFixed(1)},${(cy + r * Math.sin(a)).toFixed(1)}`;
  }
  return `${d}z`;
}

// What the marks mean, drawn with the diagram's own shapes.
export function legend() {
  const icon = (...children) => s('svg', { class: 'legend-icon', width: 34, height: 16, viewBox: '0 0 34 16', 'aria-hidden': 'true' }, ...children);
  const line = (cls, dashed) => [
    s('line', { class: `arrow ${cls}${dashed ? ' dashed' : ''}`, x1: 2, x2: 24, y1: 8, y2: 8 }),
    s('path', { class: `head ${cls}`, d: 'M31,8 l-8,-4.5 v9 z' }),
  ];
  const mark = (cls, shape) => {
    shape.setAttribute('class', 'mark-shape');
    return s('g', { class: `ev mark-${cls}` }, shape);
  };
  const item = (ic, text) => h('li', null, ic, h('span', null, text));
  return h('ul', { class: 'legend', 'data-legend': '' },
    item(icon(line('model')), 'agent asks the model'),
    item(icon(line('model answer', true)), 'the answer'),
    item(icon(line('tool')), 'tool call'),
    item(icon(line('tool', true)), 'tool result'),
    item(icon(s('g', { class: 'ev miss' }, s('line', { class: 'arrow miss', x1: 2, x2: 24, y1: 8, y2: 8 }),
      s('path', { class: 'cross', d: 'M22,3 l10,10 m0,-10 l-10,10' }))), 'miss: no recording matched'),
    item(icon(s('circle', { class: 'badge', cx: 17, cy: 8, r: 7 }), s('text', { class: 'badge-text', x: 17, y: 12, 'text-anchor': 'middle' }, 'R')), 'answered by a scenario rule'),
    item(icon(mark('start', s('circle', { cx: 17, cy: 8, r: 5 }))), 'an agent starts a turn'),
    item(icon(mark('phase', s('path', { d: 'M17,1 l7,7 l-7,7 l-7,-7 z' }))), 'phase transition'),
    item(icon(mark('route', s('path', { d: 'M11,2 h7 l6,6 l-6,6 h-7 z' }))), 'routing decision'),
    item(icon(mark('custom', s('path', { d: starPath(17, 8, 7, 3) }))), 'custom event (Traces.Emit)'),
    item(icon(mark('run', s('rect', { x: 10, y: 4, width: 14, height: 8, rx: 1 }))), 'run start / end, workflow end'),
    h('li', { class: 'legend-hint' }, 'Time flows down; #N is the event number, +t the time since the run started. Hover for the exact time, click for the request and answer.'));
}
