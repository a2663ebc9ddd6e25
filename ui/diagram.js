// The sequence diagram of a run: a lane for the test, each agent, the model
// and the tools; a row per event, in seq order, drawn as an arrow between
// two lanes or a mark on one (model.js: shapeOf). And its legend.

import { h, s } from './dom.js';
import { clip, isoMicros, num, offset } from './format.js';
import { agentOf, lanesFor, shapeOf } from './model.js';

const GUTTER = 92;
const LANE_W = 168;
const HEAD_H = 40;
const TOP = HEAD_H + 12;
const CHAR_W = 6.3; // 11.5px system sans-serif, on average

function rowHeight(sh) {
  if (sh.type === 'call') return sh.back ? 44 : 30;
  return 26;
}

// A run's diagram in `wrap` (lane heads that stay in view, the rows below);
// draw() lays it out, append() adds events as they come.
export class Diagram {
  // onSelect(ev) is called when an event is clicked or activated by key.
  // width: the room it has, in pixels; lanes share it (within limits).
  constructor({ onSelect, width = 0 } = {}) {
    this.onSelect = onSelect;
    this.room = width;
    this.laneW = LANE_W;
    this.events = [];
    this.bySeq = new Map();
    this.lanes = [];
    this.y = TOP;
    this.t0 = 0;
    this.wrap = h('div', { class: 'diagram-scroll', 'data-scroll': '' });
    this.svg = s('svg', { 'data-diagram': '', class: 'diagram', role: 'img', 'aria-label': 'sequence diagram of the run' });
    this.heads = s('svg', { class: 'lane-heads', 'aria-hidden': 'true' });
    this.wrap.append(this.heads, this.svg);
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
    return GUTTER + this.laneW / 2 + this.lanes.indexOf(lane) * this.laneW;
  }

  width() {
    return GUTTER + this.lanes.length * this.laneW + 8;
  }

  // Draws `events` from scratch with these lanes (default: their own).
  draw(events, lanes = lanesFor(events)) {
    this.events = [];
    this.bySeq.clear();
    this.lanes = lanes;
    if (this.room) this.laneW = Math.floor(Math.min(230, Math.max(90, (this.room - GUTTER - 10) / lanes.length)));
    this.y = TOP;
    this.t0 = 0;
    this.svg.replaceChildren();
    this.laneGroup = s('g', { class: 'lanes' });
    this.rows = s('g', { class: 'rows' });
    this.svg.append(this.laneGroup, this.rows);
    this.append(events, { relayout: false });
    this.drawLanes();
  }

  // Adds events after those drawn; redraws when one brings a new lane.
  append(events, { relayout = true } = {}) {
    const fresh = events.filter((ev) => !this.bySeq.has(num(ev.seq)));
    if (!fresh.length) return;
    if (relayout) {
      const lanes = lanesFor(this.events, fresh);
      if (lanes.some((l) => !this.lanes.includes(l))) {
        const all = this.events.concat(fresh);
        const marks = this.classMarks();
        this.draw(all, lanes);
        this.restoreMarks(marks);
        return;
      }
    }
    const frag = document.createDocumentFragment();
    for (const ev of fresh) {
      if (!this.t0) this.t0 = num(ev.timeMicros);
      this.events.push(ev);
      this.bySeq.set(num(ev.seq), ev);
      frag.appendChild(this.drawEvent(ev));
    }
    this.rows.appendChild(frag);
    this.resize();
  }

  classMarks() {
    const marks = [];
    for (const cls of ['selected', 'failed-check', 'divergence']) {
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
  }

  drawLanes() {
    this.laneGroup.replaceChildren();
    this.heads.replaceChildren();
    this.heads.setAttribute('width', this.width());
    this.heads.setAttribute('height', HEAD_H);
    this.heads.append(s('rect', { class: 'heads-bg', x: 0, y: 0, width: this.width(), height: HEAD_H }));
    for (const lane of this.lanes) {
      const x = this.x(lane);
      const kind = ['test', 'model', 'tools'].includes(lane) ? lane : 'agent';
      const head = () => [
        s('rect', { class: `lane-head lane-${kind}`, x: x - this.laneW / 2 + 4, y: 6, width: this.laneW - 8, height: HEAD_H - 12, rx: 6 }),
        s('text', { class: 'lane-name', x, y: HEAD_H / 2 + 4, 'text-anchor': 'middle' }, clip(lane, Math.floor((this.laneW - 12) / 7.4))),
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
    const sh = shapeOf(ev);
    const seq = num(ev.seq);
    const t = num(ev.timeMicros);
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
    const g = this.svg.querySelector(`g[data-event-seq="${num(seq)}"]`);
    if (g) g.classList.toggle(cls, on);
    return g;
  }

  clear(cls) {
    for (const g of this.svg.querySelectorAll(`g.${cls}`)) g.classList.remove(cls);
  }

  // Scrolls the event into the middle of the diagram's box.
  reveal(seq) {
    const g = this.svg.querySelector(`g[data-event-seq="${num(seq)}"]`);
    if (!g) return;
    const hit = g.querySelector('rect.hit');
    const top = Number(hit.getAttribute('y'));
    this.wrap.scrollTop = Math.max(0, top - this.wrap.clientHeight / 2);
  }

  atBottom() {
    return this.wrap.scrollTop + this.wrap.clientHeight >= this.wrap.scrollHeight - 40;
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
