// The moeplan report page (docs/report.md). moeplan writes the data as JSON
// into script#moeplan-data; this script draws it: SVG for charts, a canvas
// for the timelines (thousands of tasks), no library and no network.
// Every chart is a figure.chart[data-chart] whose data-points says how many
// marks it drew, so that a test can tell an empty chart from a drawn one.
'use strict';
(function () {
  const data = JSON.parse(document.getElementById('moeplan-data').textContent);
  const root = document.getElementById('report');
  // The SVG namespace as the browser names it: the page itself writes no URL.
  const SVG_NS = (function () {
    const probe = document.createElement('div');
    probe.innerHTML = '<svg></svg>';
    return probe.firstChild.namespaceURI;
  })();
  // Colour-blind safe series colours (Okabe-Ito), as the SVG Gantt chart uses.
  const PALETTE = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9', '#000000', '#F0E442'];
  const SPLIT = [
    {key: 'compute_ms', label: 'compute', colour: '#0072B2'},
    {key: 'exposed_comm_ms', label: 'exposed communication', colour: '#D55E00'},
    {key: 'idle_ms', label: 'idle', colour: '#BBBBBB'},
  ];
  const GiB = 1024 * 1024 * 1024;

  // ---------------------------------------------------------------- helpers

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'text') node.textContent = v;
      else if (k === 'class') node.className = v;
      else node.setAttribute(k, v);
    }
    for (const child of children || []) if (child) node.append(child);
    return node;
  }

  function svgEl(tag, attrs, parent) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'text') node.textContent = v;
      else node.setAttribute(k, v);
    }
    if (parent) parent.append(node);
    return node;
  }

  function titled(node, text) {
    svgEl('title', {text: text}, node);
    return node;
  }

  // Up to four significant digits, without a trailing ".0".
  function num(v) {
    if (v === null || v === undefined || !isFinite(v)) return 'n/a';
    const a = Math.abs(v);
    if (a >= 1000) return v.toFixed(0);
    if (a >= 100) return v.toFixed(1);
    if (a >= 10) return v.toFixed(2);
    return v.toFixed(3);
  }
  const ms = (v) => num(v) + ' ms';

  function bytes(b) {
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (b >= 1024 && i < units.length - 1) {
      b /= 1024;
      i++;
    }
    return (Number.isInteger(b) ? b.toFixed(0) : b.toFixed(1)) + ' ' + units[i];
  }

  // Ticks at 1, 2 or 5 times a power of ten: the rule of output::axis_ticks
  // (include/moeplan/io/timeline_layout.hpp), so the SVG chart and the page
  // label their axes alike.
  function tickStep(lo, hi, maxTicks) {
    const span = hi > lo ? hi - lo : 1;
    const raw = span / Math.max(1, maxTicks);
    let exponent = 0;
    let power = 1;
    while (power * 10 <= raw) {
      power *= 10;
      exponent++;
    }
    while (power > raw) {
      exponent--;
      power = exponent >= 0 ? Math.pow(10, exponent) : 1 / Math.pow(10, -exponent);
    }
    for (const m of [1, 2, 5]) if (m * power >= raw) return {mantissa: m, exponent: exponent};
    return {mantissa: 1, exponent: exponent + 1};
  }

  function niceTicks(lo, hi, maxTicks) {
    if (!(hi > lo)) hi = lo + 1;
    const s = tickStep(lo, hi, maxTicks);
    const scale = (units) => (s.exponent >= 0 ? units * Math.pow(10, s.exponent) : units / Math.pow(10, -s.exponent));
    const size = scale(s.mantissa);
    const decimals = Math.max(0, -s.exponent);
    const out = [];
    const first = Math.ceil(lo / size - 1e-9);
    const last = Math.floor(hi / size + 1e-9);
    for (let i = first; i <= last; i++) {
      let value = scale(i * s.mantissa);
      if (value === 0) value = 0;
      out.push({value: value, label: value.toFixed(decimals)});
    }
    return out;
  }

  function linear(d0, d1, r0, r1) {
    const k = d1 > d0 ? (r1 - r0) / (d1 - d0) : 0;
    return (v) => r0 + (v - d0) * k;
  }

  function geomean(values) {
    let sum = 0;
    let n = 0;
    for (const v of values)
      if (v !== null && v > 0) {
        sum += Math.log(v);
        n++;
      }
    return n > 0 ? Math.exp(sum / n) : null;
  }

  // A chart: figure[data-chart] with a caption; finish() records its marks.
  function figure(name, caption, detail) {
    const fig = el('figure', {class: 'chart', 'data-chart': name});
    const cap = el('figcaption', {text: caption});
    if (detail) cap.append(' ', el('span', {class: 'detail', text: detail}));
    fig.append(cap);
    return fig;
  }

  function finish(fig, marks) {
    fig.dataset.points = String(marks);
    return fig;
  }

  function legend(items) {
    const box = el('div', {class: 'legend'});
    for (const item of items) {
      const sw = el('span', {class: 'swatch'});
      sw.style.background = item.colour;
      if (item.opacity !== undefined) sw.style.opacity = item.opacity;
      box.append(el('span', {}, [sw, item.label]));
    }
    return box;
  }

  // An x axis along y, ticks at round values: grid lines up to `top`.
  function xAxis(svg, ticks, x, y, top, label, format) {
    const g = svgEl('g', {class: 'axis'}, svg);
    const grid = svgEl('g', {class: 'grid'}, svg);
    svg.insertBefore(grid, svg.firstChild);
    for (const t of ticks) {
      const px = x(t.value);
      svgEl('line', {x1: px, x2: px, y1: top, y2: y}, grid);
      svgEl('line', {x1: px, x2: px, y1: y, y2: y + 4}, g);
      svgEl('text', {x: px, y: y + 16, 'text-anchor': 'middle', text: format ? format(t.value) : t.label}, g);
    }
    if (label) svgEl('text', {x: x(ticks.length ? ticks[ticks.length - 1].value : 0), y: y + 30, 'text-anchor': 'end', text: label}, g);
  }

  function yAxis(svg, ticks, y, x, right, label, format) {
    const g = svgEl('g', {class: 'axis'}, svg);
    const grid = svgEl('g', {class: 'grid'}, svg);
    svg.insertBefore(grid, svg.firstChild);
    for (const t of ticks) {
      const py = y(t.value);
      svgEl('line', {x1: x, x2: right, y1: py, y2: py}, grid);
      svgEl('text', {x: x - 6, y: py + 4, 'text-anchor': 'end', text: format ? format(t.value) : t.label}, g);
    }
    if (label) svgEl('text', {x: x - 44, y: y(ticks.length ? ticks[ticks.length - 1].value : 0) - 10, text: label}, g);
  }

  function svgRoot(width, height) {
    return svgEl('svg', {viewBox: '0 0 ' + width + ' ' + height, width: width, height: height});
  }

  // ------------------------------------------------------- stacked bar chart

  // rows: [{name, role, iteration_ms, compute_ms, exposed_comm_ms, idle_ms}]
  function splitBars(name, caption, detail, rows) {
    const fig = figure(name, caption, detail);
    fig.append(legend(SPLIT));
    // Room for the longest label (about 6.5 px a character at 11 px).
    const labelW = Math.min(380, 16 + 6.5 * Math.max(...rows.map((r) => r.name.length + (r.role ? r.role.length + 3 : 0))));
    const width = labelW + 520;
    const rowH = 24;
    const top = 8;
    const height = top + rows.length * rowH + 40;
    const max = Math.max(...rows.map((r) => r.iteration_ms), 1e-12);
    const x = linear(0, max * 1.02, labelW, width - 70);
    const svg = svgRoot(width, height);
    let marks = 0;
    rows.forEach((r, i) => {
      const y = top + i * rowH;
      const label = svgEl('text', {x: labelW - 8, y: y + 16, 'text-anchor': 'end', text: r.name}, svg);
      if (r.role) {
        label.setAttribute('font-weight', r.role === 'chosen' ? 'bold' : 'normal');
        svgEl('tspan', {fill: '#5b5b66', text: ' (' + r.role + ')'}, label);
      }
      let at = 0;
      for (const part of SPLIT) {
        const v = r[part.key];
        const rect = svgEl('rect', {class: 'mark', x: x(at), y: y + 3, width: Math.max(0, x(at + v) - x(at)), height: rowH - 6, fill: part.colour, 'data-value': v}, svg);
        titled(rect, r.name + ': ' + part.label + ' ' + ms(v) + ' of ' + ms(r.iteration_ms));
        at += v;
        marks++;
      }
      svgEl('text', {x: x(r.iteration_ms) + 4, y: y + 16, text: ms(r.iteration_ms)}, svg);
    });
    xAxis(svg, niceTicks(0, max, 6), x, top + rows.length * rowH + 2, top, 'ms');
    fig.append(svg);
    return finish(fig, marks);
  }

  // -------------------------------------------------------------- line chart

  // series: [{name, points: [[x, y], ...]}]; mark: {series, x} to ring.
  function lineChart(name, caption, detail, series, opts) {
    const fig = figure(name, caption, detail);
    fig.append(legend(series.map((s, i) => ({label: s.name, colour: PALETTE[i % PALETTE.length]}))));
    const width = 1180;
    const height = 300;
    const left = 70;
    const right = width - 20;
    const top = 12;
    const bottom = height - 44;
    const xs = series.flatMap((s) => s.points.map((p) => p[0]));
    const ys = series.flatMap((s) => s.points.map((p) => p[1]));
    const tx = opts.xLog ? (v) => Math.log2(v) : (v) => v;
    const x0 = Math.min(...xs.map(tx));
    const x1 = Math.max(...xs.map(tx));
    const y0 = Math.min(...ys);
    const y1 = Math.max(...ys);
    const pad = (y1 - y0) * 0.08 || Math.abs(y1) * 0.02 || 1;
    const xr = linear(x0, x1 > x0 ? x1 : x0 + 1, left + 8, right - 8);
    const x = (v) => xr(tx(v));
    const y = linear(y0 - pad, y1 + pad, bottom, top);
    const svg = svgRoot(width, height);
    const xTicks = opts.xLog
      ? niceTicks(x0, x1, 8).filter((t) => Number.isInteger(t.value)).map((t) => ({value: Math.pow(2, t.value), label: ''}))
      : niceTicks(x0, x1, 10);
    xAxis(svg, xTicks, x, bottom, top, opts.xLabel, opts.xFormat);
    yAxis(svg, niceTicks(y0 - pad, y1 + pad, 6), y, left, right, opts.yLabel);
    let marks = 0;
    series.forEach((s, i) => {
      const colour = PALETTE[i % PALETTE.length];
      const pts = s.points.slice().sort((a, b) => a[0] - b[0]);
      if (pts.length > 1)
        svgEl('polyline', {points: pts.map((p) => x(p[0]) + ',' + y(p[1])).join(' '), fill: 'none', stroke: colour, 'stroke-width': 1.5}, svg);
      s.points.forEach((p, k) => {
        const c = svgEl('circle', {class: 'mark', cx: x(p[0]), cy: y(p[1]), r: 3.5, fill: colour, 'data-x': p[0], 'data-y': p[1]}, svg);
        titled(c, s.name + ': ' + (opts.xFormat ? opts.xFormat(p[0]) : p[0]) + ' -> ' + ms(p[1]) + (opts.numbered ? ' (sample ' + (k + 1) + ')' : ''));
        if (opts.numbered) svgEl('text', {x: x(p[0]) + 5, y: y(p[1]) - 5, 'font-size': 9, fill: '#5b5b66', text: String(k + 1)}, svg);
        marks++;
      });
    });
    if (opts.mark) {
      const s = series.find((t) => t.name === opts.mark.series);
      const p = s && s.points.find((q) => q[0] === opts.mark.x);
      if (p) {
        svgEl('circle', {class: 'chosen', cx: x(p[0]), cy: y(p[1]), r: 8, fill: 'none', stroke: '#000', 'stroke-width': 2}, svg);
        const nearRight = x(p[0]) > left + (right - left) * 0.6;
        svgEl('text', {x: x(p[0]) + (nearRight ? -10 : 10), y: y(p[1]) + (y(p[1]) > bottom - 30 ? -12 : 18), 'text-anchor': nearRight ? 'end' : 'start', 'font-weight': 'bold',
          text: 'chosen: ' + (opts.xFormat ? opts.xFormat(p[0]) : p[0]) + ', ' + ms(p[1])}, svg);
      }
    }
    fig.append(svg);
    return finish(fig, marks);
  }

  // ------------------------------------------------------------- timelines

  // One view (a visible time range) shared by the chosen and baseline
  // timelines, so that zooming one zooms both and their lengths compare.
  class TimeView {
    constructor(full) {
      this.full = full;
      this.start = 0;
      this.end = full;
      this.listeners = [];
    }
    set(start, end) {
      const minSpan = Math.max(this.full * 1e-6, 1e-9);
      let span = Math.min(Math.max(end - start, minSpan), this.full);
      start = Math.min(Math.max(start, 0), this.full - span);
      this.start = start;
      this.end = start + span;
      for (const f of this.listeners) f();
    }
    zoom(factor, at) {
      const anchor = at === undefined ? (this.start + this.end) / 2 : at;
      const span = (this.end - this.start) * factor;
      const share = (anchor - this.start) / (this.end - this.start);
      this.set(anchor - span * share, anchor - span * share + span);
    }
  }

  class TimelineCanvas {
    constructor(fig, timeline, view) {
      this.fig = fig;
      this.t = timeline;
      this.view = view;
      this.labelW = 130;
      this.rows = [];
      // Lanes grouped by rank (a pipeline stage in folding), each stream a row.
      let y = 22;
      let lastRank = null;
      timeline.lanes.forEach((lane, i) => {
        if (lastRank !== null && lane.rank !== lastRank) y += 6;
        const h = timeline.stages ? (lane.stream === 'compute' ? 18 : 9) : 16;
        this.rows.push({top: y, height: h, lane: lane, first: lane.rank !== lastRank, index: i});
        lastRank = lane.rank;
        y += h + 2;
      });
      this.height = y + 30;
      // Tasks per lane, for the tooltip.
      this.byLane = timeline.lanes.map(() => []);
      for (let k = 0; k < timeline.tasks.length; k += 6) this.byLane[timeline.tasks[k]].push(k);
      this.canvas = el('canvas', {height: this.height});
      fig.append(this.canvas);
      this.tip = el('div', {class: 'tooltip'});
      document.body.append(this.tip);
      this.listen();
      view.listeners.push(() => this.draw());
    }

    plot() {
      const width = this.canvas.clientWidth || 1000;
      return {x0: this.labelW, x1: width - 12, width: width};
    }

    timeAt(px) {
      const p = this.plot();
      return this.view.start + ((px - p.x0) / (p.x1 - p.x0)) * (this.view.end - this.view.start);
    }

    listen() {
      const c = this.canvas;
      c.addEventListener('wheel', (e) => {
        e.preventDefault();
        const r = c.getBoundingClientRect();
        this.view.zoom(Math.exp(e.deltaY * 0.0015), this.timeAt(e.clientX - r.left));
      }, {passive: false});
      let drag = null;
      c.addEventListener('mousedown', (e) => {
        drag = {x: e.clientX, start: this.view.start, end: this.view.end};
        c.classList.add('dragging');
      });
      window.addEventListener('mouseup', () => {
        drag = null;
        c.classList.remove('dragging');
      });
      c.addEventListener('mousemove', (e) => {
        const r = c.getBoundingClientRect();
        if (drag) {
          const p = this.plot();
          const shift = ((e.clientX - drag.x) / (p.x1 - p.x0)) * (drag.end - drag.start);
          this.view.set(drag.start - shift, drag.end - shift);
          return;
        }
        this.hover(e.clientX - r.left, e.clientY - r.top, e.clientX, e.clientY);
      });
      c.addEventListener('mouseleave', () => (this.tip.style.display = 'none'));
    }

    hover(px, py, cx, cy) {
      const row = this.rows.find((r) => py >= r.top && py < r.top + r.height);
      const tasks = this.t.tasks;
      let hit = null;
      if (row && px >= this.labelW) {
        const time = this.timeAt(px);
        const slack = (this.view.end - this.view.start) / 1000;
        for (const k of this.byLane[row.index])
          if (tasks[k + 1] - slack <= time && time <= tasks[k + 2] + slack) hit = k;
      }
      if (hit === null) {
        this.tip.style.display = 'none';
        return;
      }
      const phase = ['', 'forward', 'backward'][tasks[hit + 4]];
      this.tip.textContent = this.t.names[tasks[hit + 5]] + '\n' + data.ops[tasks[hit + 3]].name + (phase ? ', ' + phase : '') +
        '\n' + num(tasks[hit + 1]) + ' - ' + num(tasks[hit + 2]) + ' ms (' + ms(tasks[hit + 2] - tasks[hit + 1]) + ')';
      this.tip.style.display = 'block';
      this.tip.style.left = cx + 12 + 'px';
      this.tip.style.top = cy + 12 + 'px';
    }

    draw() {
      const p = this.plot();
      const ratio = window.devicePixelRatio || 1;
      const c = this.canvas;
      c.width = Math.round(p.width * ratio);
      c.height = Math.round(this.height * ratio);
      c.style.height = this.height + 'px';
      const g = c.getContext('2d');
      g.setTransform(ratio, 0, 0, ratio, 0, 0);
      g.fillStyle = '#fff';
      g.fillRect(0, 0, p.width, this.height);
      const v = this.view;
      const x = linear(v.start, v.end, p.x0, p.x1);
      const axisY = this.height - 26;
      const ticks = niceTicks(v.start, v.end, Math.max(2, Math.floor((p.x1 - p.x0) / 90)));
      g.font = '11px sans-serif';
      // Rows and their labels.
      for (const r of this.rows) {
        g.fillStyle = '#eeeeee';
        g.fillRect(p.x0, r.top, p.x1 - p.x0, r.height);
        g.fillStyle = '#5b5b66';
        g.textAlign = 'right';
        g.font = (this.t.stages ? 8 : 10) + 'px sans-serif';
        g.fillText(r.lane.stream, p.x0 - 6, r.top + r.height - (this.t.stages ? 1 : 4));
        if (r.first) {
          g.fillStyle = '#1d1d1f';
          g.textAlign = 'left';
          g.font = 'bold 11px sans-serif';
          g.fillText((this.t.stages ? 'stage ' : 'rank ') + r.lane.rank, 4, r.top + 12);
        }
      }
      // Grid lines at the ticks.
      g.strokeStyle = '#d0d0d6';
      g.lineWidth = 1;
      for (const t of ticks) {
        const px = Math.round(x(t.value)) + 0.5;
        g.beginPath();
        g.moveTo(px, 16);
        g.lineTo(px, axisY);
        g.stroke();
      }
      // Tasks in view; backward lighter where the phases interleave (no divider).
      const tasks = this.t.tasks;
      const lighter = this.t.divider_ms === null;
      let drawn = 0;
      g.font = '9px sans-serif';
      g.textAlign = 'left';
      g.save();
      g.beginPath();
      g.rect(p.x0, 0, p.x1 - p.x0, this.height);
      g.clip();
      for (let k = 0; k < tasks.length; k += 6) {
        const start = tasks[k + 1];
        const end = tasks[k + 2];
        if (end < v.start || start > v.end) continue;
        const row = this.rows[tasks[k]];
        // Whole pixels: crisp edges, and a small picture compresses well.
        const left = Math.round(x(start));
        const w = Math.max(1, Math.round(x(end)) - left);
        g.globalAlpha = lighter && tasks[k + 4] === 2 ? 0.55 : 1;
        g.fillStyle = data.ops[tasks[k + 3]].colour;
        g.fillRect(left, row.top, w, row.height);
        g.globalAlpha = 1;
        if (w > 3) {
          g.strokeStyle = '#333';
          g.lineWidth = 0.3;
          g.strokeRect(left, row.top, w, row.height);
        }
        const name = this.t.names[tasks[k + 5]];
        if (row.height >= 14 && w > name.length * 5.5 + 6) {
          g.fillStyle = '#000';
          g.fillText(name, Math.max(left, p.x0) + 3, row.top + row.height / 2 + 3);
        }
        drawn++;
      }
      // Where forward ends, and where the iteration ends.
      const marker = (time, colour, dash, label, align) => {
        if (time < v.start || time > v.end) return;
        const px = Math.round(x(time)) + 0.5;
        g.strokeStyle = colour;
        g.lineWidth = 1.5;
        g.setLineDash(dash);
        g.beginPath();
        g.moveTo(px, 6);
        g.lineTo(px, axisY);
        g.stroke();
        g.setLineDash([]);
        g.fillStyle = colour;
        g.font = '11px sans-serif';
        g.textAlign = align;
        g.fillText(label, px + (align === 'left' ? 4 : -4), 14);
      };
      if (this.t.divider_ms !== null) {
        marker(this.t.divider_ms, '#000', [6, 3], 'forward \u2190', 'right');
        g.textAlign = 'left';
        if (this.t.divider_ms >= v.start && this.t.divider_ms <= v.end) g.fillText('\u2192 backward', x(this.t.divider_ms) + 4, 14);
      }
      marker(this.t.iteration_ms, '#b00020', [2, 2], 'end ' + ms(this.t.iteration_ms), 'right');
      g.restore();
      // Axis in ms.
      g.strokeStyle = '#333';
      g.lineWidth = 1;
      g.beginPath();
      g.moveTo(p.x0, axisY + 0.5);
      g.lineTo(p.x1, axisY + 0.5);
      g.stroke();
      g.fillStyle = '#1d1d1f';
      g.font = '11px sans-serif';
      g.textAlign = 'center';
      for (const t of ticks) g.fillText(t.label, x(t.value), axisY + 15);
      g.textAlign = 'right';
      g.fillText('time (ms)', p.x0 - 6, axisY + 15);
      const f = this.fig;
      f.dataset.viewStartMs = String(v.start);
      f.dataset.viewEndMs = String(v.end);
      f.dataset.ticks = JSON.stringify(ticks.map((t) => t.label));
      finish(f, drawn);
    }
  }

  function timelines(section, list) {
    const full = Math.max(...list.map((t) => t.iteration_ms), 1e-9);
    const view = new TimeView(full);
    const controls = el('div', {class: 'controls'});
    const button = (label, title, action) => {
      const b = el('button', {type: 'button', title: title, text: label, 'data-action': title});
      b.addEventListener('click', action);
      controls.append(b);
    };
    button('+', 'zoom in', () => view.zoom(0.5));
    button('\u2212', 'zoom out', () => view.zoom(2));
    button('reset', 'reset', () => view.set(0, full));
    controls.append(el('span', {class: 'hint', text: 'wheel over a timeline zooms at the cursor, drag pans, hover names a task'}));
    section.append(controls);
    const ops = new Set(list.flatMap((t) => t.ops));
    const items = data.ops.filter((o) => ops.has(o.name)).map((o) => ({label: o.name, colour: o.colour}));
    if (list.some((t) => t.divider_ms === null)) items.push({label: 'lighter: backward', colour: '#555', opacity: 0.55});
    section.append(legend(items));
    const canvases = list.map((t) => {
      const shown = t.ranks.length < t.ranks_total ? ' (ranks ' + t.ranks.join(', ') + ' of ' + t.ranks_total + ')' : '';
      const fig = figure('timeline-' + t.label, t.label + ': ' + t.schedule + (t.knobs ? ' (' + t.knobs + ')' : ''),
        ms(t.iteration_ms) + ' per iteration' + shown);
      section.append(fig);
      return new TimelineCanvas(fig, t, view);
    });
    const redraw = () => canvases.forEach((c) => c.draw());
    window.addEventListener('resize', redraw);
    redraw();
  }

  // ------------------------------------------------------------ scatter plot

  // The folding search: MFU against memory per GPU, folded and coupled mappings.
  function mappingScatter(m, limit) {
    const fig = figure('mfu-memory', 'The folding search: MFU against memory per GPU',
      m.mode.length + ' mappings; hollow or dashed: does not fit; red line: usable memory (GPU less the CUDA context, over the allocator\'s overhead)');
    const modes = ['folded', 'coupled'];
    fig.append(legend(modes.map((mode, i) => ({label: mode, colour: PALETTE[i]}))));
    const width = 1180;
    const height = 320;
    const left = 70;
    const right = width - 20;
    const top = 12;
    const bottom = height - 44;
    const gib = m.memory_bytes.map((b) => b / GiB);
    const mfu = m.mfu.map((v) => 100 * v);
    const xmax = Math.max(...gib, limit / GiB) * 1.04;
    const ymax = Math.max(...mfu) * 1.08;
    const x = linear(0, xmax, left, right);
    const y = linear(0, ymax, bottom, top);
    const svg = svgRoot(width, height);
    xAxis(svg, niceTicks(0, xmax, 8), x, bottom, top, 'GiB per GPU');
    yAxis(svg, niceTicks(0, ymax, 6), y, left, right, 'MFU %');
    const lx = x(limit / GiB);
    svgEl('line', {x1: lx, x2: lx, y1: top, y2: bottom, stroke: '#b00020', 'stroke-dasharray': '6 3'}, svg);
    let marks = 0;
    // Every coupled mapping is also a folded one (etp = tp): folded dots first,
    // coupled ones as open squares around them.
    for (const mode of modes) {
      const colour = PALETTE[modes.indexOf(mode)];
      m.mode.forEach((md, i) => {
        if (md !== mode) return;
        const node = mode === 'folded'
          ? svgEl('circle', {class: 'mark', cx: x(gib[i]), cy: y(mfu[i]), r: 2.5, fill: m.fits[i] ? colour : 'none', stroke: colour, 'data-mode': mode}, svg)
          : svgEl('rect', {class: 'mark', x: x(gib[i]) - 4.5, y: y(mfu[i]) - 4.5, width: 9, height: 9, fill: 'none', stroke: colour, 'stroke-width': 1.5,
            'stroke-dasharray': m.fits[i] ? 'none' : '2 2', 'data-mode': mode}, svg);
        titled(node, mode + ' ' + m.label[i] + ': MFU ' + mfu[i].toFixed(1) + '%, ' + gib[i].toFixed(1) + ' GiB, ' + ms(m.iteration_ms[i]) + (m.fits[i] ? '' : ' (does not fit)'));
        marks++;
      });
    }
    if (m.chosen !== null) {
      const i = m.chosen;
      svgEl('circle', {class: 'chosen', cx: x(gib[i]), cy: y(mfu[i]), r: 9, fill: 'none', stroke: '#000', 'stroke-width': 2}, svg);
      svgEl('text', {x: x(gib[i]) + 12, y: y(mfu[i]) - 8, 'font-weight': 'bold', text: 'chosen: ' + m.label[i] + ', MFU ' + mfu[i].toFixed(1) + '%'}, svg);
    }
    fig.append(svg);
    return finish(fig, marks);
  }

  // FSMoE: the dense gradients all-reduced during each layer's backward, and after it.
  function gradientPartition(plan) {
    const per = plan.knobs.grad_partition_bytes || [];
    const tail = plan.knobs.grad_tail_bytes || 0;
    const fig = figure('grad-partition', 'FSMoE gradient partition', 'MB of dense gradients all-reduced during each layer\'s backward pass, and after it');
    const labels = per.map((_, i) => 'layer ' + i).concat(['after backward']);
    const values = per.concat([tail]).map((b) => b / 1e6);
    const width = 1180;
    const height = 260;
    const left = 70;
    const right = width - 20;
    const top = 12;
    const bottom = height - 40;
    const ymax = Math.max(...values, 1e-9) * 1.1;
    const y = linear(0, ymax, bottom, top);
    const band = (right - left) / values.length;
    const svg = svgRoot(width, height);
    yAxis(svg, niceTicks(0, ymax, 5), y, left, right, 'MB');
    // Every k-th layer labelled, k such that labels do not overlap; the tail always.
    const every = Math.max(1, Math.ceil(28 / band));
    values.forEach((v, i) => {
      const tail = i === per.length;
      const rect = svgEl('rect', {class: 'mark', x: left + i * band + band * 0.15, y: y(v), width: band * 0.7, height: Math.max(0, bottom - y(v)), fill: tail ? PALETTE[1] : PALETTE[0], 'data-value': v}, svg);
      titled(rect, labels[i] + ': ' + num(v) + ' MB');
      if (tail || (i % every === 0 && i + every <= per.length))
        svgEl('text', {x: left + (i + 0.5) * band, y: bottom + 16, 'text-anchor': 'middle', text: tail ? 'after' : String(i)}, svg);
    });
    svgEl('text', {x: left, y: bottom + 32, fill: '#5b5b66', text: 'layer'}, svg);
    fig.append(svg);
    return finish(fig, values.length);
  }

  // ---------------------------------------------------------------- heat map

  // A colour for v: ratios diverge from 1 (blue faster, orange slower), other metrics run light to dark.
  function heatColour(v, lo, hi, ratio) {
    if (v === null) return '#ffffff';
    if (ratio) {
      const reach = Math.max(Math.abs(Math.log(lo)), Math.abs(Math.log(hi)), 1e-9);
      const t = Math.max(-1, Math.min(1, Math.log(v) / reach));
      const to = t >= 0 ? [0, 114, 178] : [213, 94, 0];
      const a = Math.abs(t);
      return 'rgb(' + to.map((c) => Math.round(255 + (c - 255) * a)).join(',') + ')';
    }
    const t = hi > lo ? (v - lo) / (hi - lo) : 0.5;
    return 'rgb(' + [222, 235, 247].map((c, i) => Math.round(c + ([8, 48, 107][i] - c) * t)).join(',') + ')';
  }

  // cells[r][c] = {value, count}; rows, cols: labels.
  function heatmap(fig, rows, cols, cells, ratio, rowTitle, colTitle) {
    const labelW = Math.min(300, 16 + 6.5 * Math.max(...rows.map((r) => r.length), rowTitle.length, 4));
    // Cells as wide as their column labels, within the page.
    const cellW = Math.max(48, Math.min(6.5 * Math.max(...cols.map((c) => c.length)) + 10, 180, 900 / Math.max(cols.length, 1)));
    const cellH = 24;
    const top = 40;
    const width = labelW + cols.length * cellW + 10;
    const height = top + rows.length * cellH + 10;
    const values = cells.flat().map((c) => c.value).filter((v) => v !== null);
    const lo = Math.min(...values);
    const hi = Math.max(...values);
    const svg = svgRoot(width, height);
    svgEl('text', {x: labelW + (cols.length * cellW) / 2, y: 12, 'text-anchor': 'middle', fill: '#5b5b66', text: colTitle + ' \u2192'}, svg);
    svgEl('text', {x: labelW - 6, y: top - 6, 'text-anchor': 'end', fill: '#5b5b66', text: rowTitle + ' \u2193'}, svg);
    cols.forEach((c, j) => svgEl('text', {x: labelW + (j + 0.5) * cellW, y: top - 6, 'text-anchor': 'middle', text: c}, svg));
    let marks = 0;
    rows.forEach((r, i) => {
      svgEl('text', {x: labelW - 6, y: top + i * cellH + 16, 'text-anchor': 'end', text: r}, svg);
      cols.forEach((c, j) => {
        const cell = cells[i][j];
        const rect = svgEl('rect', {class: 'mark', x: labelW + j * cellW, y: top + i * cellH, width: cellW - 2, height: cellH - 2,
          fill: heatColour(cell.value, lo, hi, ratio), 'data-row': r, 'data-col': c, 'data-value': cell.value === null ? '' : cell.value, 'data-count': cell.count}, svg);
        titled(rect, r + ' / ' + c + ': ' + (cell.value === null ? 'no data' : (ratio ? cell.value.toFixed(3) + 'x' : num(cell.value))) + ' over ' + cell.count + ' rows');
        if (cell.value !== null) {
          const dark = ratio ? Math.abs(Math.log(cell.value)) > 0.6 * Math.max(Math.abs(Math.log(lo)), Math.abs(Math.log(hi))) : hi > lo && (cell.value - lo) / (hi - lo) > 0.6;
          svgEl('text', {x: labelW + (j + 0.5) * cellW - 1, y: top + i * cellH + 15, 'text-anchor': 'middle', fill: dark ? '#fff' : '#000', 'pointer-events': 'none',
            text: ratio ? cell.value.toFixed(3) : num(cell.value)}, svg);
        }
        marks++;
      });
    });
    fig.append(svg);
    return marks;
  }

  // ------------------------------------------------------------------ pages

  function header(subtitle) {
    root.append(el('header', {}, [el('h1', {text: data.title}), el('p', {class: 'sub', text: subtitle})]));
  }

  function notes(list) {
    if (list && list.length) root.append(el('ul', {class: 'notes'}, list.map((n) => el('li', {text: n}))));
  }

  // A plan JSON's knobs in a few words.
  function knobsShort(k) {
    if (k.parallelism) {
      const p = k.parallelism;
      return 'tp' + p.tp + ' cp' + p.cp + ' pp' + p.pp + ' vpp' + p.vpp + ' ep' + p.ep + ' etp' + p.etp + ' mb' + k.micro_batch_size;
    }
    const parts = [];
    if (k.degree !== undefined) parts.push('d ' + k.degree);
    if (k.degree_forward !== undefined) parts.push('r ' + k.degree_forward + '/' + k.degree_backward);
    if (k.ar_chunk_bytes !== undefined) parts.push('Sp ' + bytes(k.ar_chunk_bytes));
    return parts.join(', ');
  }

  function summaryTable(plan, chosenTimeline) {
    const rows = [];
    const add = (k, v, cls) => rows.push(el('tr', {}, [el('th', {text: k}), el('td', {text: v, class: cls || ''})]));
    const c = plan.chosen;
    add('chosen', c.schedule + (chosenTimeline.knobs ? ' (' + chosenTimeline.knobs + ')' : ''), 'big');
    add('iteration', ms(chosenTimeline.iteration_ms), 'big');
    add('tokens per second', Math.round(c.tokens_per_s).toLocaleString('en-US'));
    for (const b of plan.baselines) add('speed-up over ' + b.name, b.speedup.toFixed(3) + 'x (' + ms(b.iteration_ms) + ')');
    if (c.mfu !== undefined) add('MFU', (100 * c.mfu).toFixed(1) + '%');
    add('memory per GPU', (c.memory_bytes_per_gpu / GiB).toFixed(1) + ' GiB' + (c.fits ? ', fits' : ', does not fit'));
    const e = plan.explanation;
    if (e.runner_up !== null) add('runner-up', e.runner_up + ' (' + knobsShort(e.runner_up_knobs) + '), ' + e.margin_pct.toFixed(2) + '% slower');
    if (e.ties.length) add('ties within ' + e.ties_within_pct + '%', e.ties.map((t) => t.schedule + ' (' + knobsShort(t.knobs) + ')').join(', '));
    if (e.binding_constraint) add('binding constraint', e.binding_constraint.name + ': ' + e.binding_constraint.detail);
    if (e.edge_knobs && e.edge_knobs.length) add('knob at an edge', e.edge_knobs.map((k) => k.knob + ' = ' + k.value + ': ' + k.advice).join('; '));
    if (e.sensitivity && e.sensitivity.runs.length)
      add('bandwidths and GEMM speed +-20%', e.fragile ? 'FRAGILE: another candidate wins in some runs' : 'robust: the chosen one stays first');
    return el('table', {class: 'summary'}, rows);
  }

  // The picture of the search its record names (data.chart): each family's own.
  function familyChart(section) {
    const plan = data.plan;
    if (data.chart === 'degree-curve') {
      const series = plan.schedules.filter((s) => s.degrees_tried.length > 1).map((s) => ({name: s.schedule, points: s.degrees_tried}));
      if (series.length)
        section.append(lineChart('degree-curve', 'FoldMoE: iteration time against the overlap degree d', 'each schedule at every degree searched',
          series, {xLabel: 'd', yLabel: 'ms', mark: {series: plan.chosen.schedule, x: plan.knobs.degree}}));
    } else if (data.chart === 'sp-curve' && plan.bo_trace) {
      const t = plan.bo_trace;
      section.append(lineChart('sp-curve', 'FlowMoE: Bayesian optimisation of the all-reduce chunk Sp',
        'samples in the order BO took them (R = ' + t.degree + ')',
        [{name: 'flowmoe, R = ' + t.degree, points: t.samples.map((s) => [s.ar_chunk_bytes, s.iteration_ms])}],
        {xLog: true, xLabel: 'Sp', xFormat: bytes, yLabel: 'ms', numbered: true, mark: {series: 'flowmoe, R = ' + t.degree, x: t.best_ar_chunk_bytes}}));
    } else if (data.chart === 'gradient-partition') {
      section.append(gradientPartition(plan));
    } else if (data.chart === 'mfu-memory' && data.chart_data) {
      section.append(mappingScatter(data.chart_data, data.memory_limit_bytes));
    }
  }

  function planPage() {
    const plan = data.plan;
    header(data.family + ' scenario ' + plan.scenario + ' \u00b7 from ' + data.input + ' \u00b7 ' + data.version);
    notes(data.notes);
    const grid = el('div', {class: 'grid'});
    const left = el('section', {id: 'plan-summary'}, [el('h2', {text: 'The plan'}), summaryTable(plan, data.timelines[0])]);
    left.append(el('details', {}, [el('summary', {text: 'The planner\'s explanation'}), el('pre', {text: data.plan_text})]));
    const byMapping = data.bars_by === 'mapping';
    const right = el('section', {id: 'bars'}, [el('h2', {text: byMapping ? 'Iteration time by mapping' : 'Iteration time by schedule'})]);
    right.append(splitBars('schedule-bars', byMapping ? 'The best folded mappings and the best coupled one' : 'Every schedule at its best knobs',
      byMapping ? 'communication inside a pipeline chunk runs in line with compute: all of it is exposed' : 'on the critical rank',
      data.bars));
    grid.append(left, right);
    root.append(grid);
    const section = el('section', {id: 'timeline'}, [el('h2', {text: data.timelines.length > 1 ? 'Timeline: the chosen run beside the baseline' : 'Timeline of the chosen run'})]);
    root.append(section);
    timelines(section, data.timelines);
    const family = el('section', {id: 'family'}, [el('h2', {text: 'The search'})]);
    familyChart(family);
    if (family.querySelector('figure')) root.append(family);
  }

  // A sweep: FSMoE Table 4's picture, speed-ups as heat maps.
  function sweepPage() {
    const s = data.sweep;
    const rows = s.rows;
    header(s.points + ' grid points x ' + s.schedules.length + ' schedules \u00b7 ' + rows.schedule.length + ' rows from ' + data.input + ' \u00b7 ' + data.version);
    const metrics = [
      {key: 'speedup_vs_tutel', label: 'speed-up over tutel', ratio: true},
      {key: 'speedup_vs_none', label: 'speed-up over none', ratio: true},
      {key: 'iteration_ms', label: 'iteration ms', ratio: false},
    ].filter((m) => rows[m.key].some((v) => v !== null));
    // Pseudo-axis -1 is the base scenario (the testbed in Table 4).
    // An axis that sets several fields at once (CSV column axisN) is named by the fields its values set.
    const axisName = (a) => {
      if (a < 0) return 'scenario';
      const axis = s.axes[a];
      if (/^axis[0-9]+$/.test(axis.name) && axis.values.length && axis.values[0].includes('='))
        return shortValue(axis.values[0].split(';').map((part) => part.split('=')[0]).join(';'));
      return shortValue(axis.name);
    };
    const axisValues = (a) => (a < 0 ? s.scenarios : s.axes[a].values).map(shortValue);
    const valueOf = (a, i) => (a < 0 ? rows.scenario[i] : rows.axes[a][i]);
    function shortValue(v) {
      return v.replace(/model\.moe\.|model\.|workload\./g, '').replace(/;/g, ', ');
    }
    function aggregate(metric, schedule, rowAxis, colAxis) {
      const nr = rowAxis === 'schedule' ? s.schedules.length : axisValues(rowAxis).length;
      const nc = axisValues(colAxis).length;
      const bins = Array.from({length: nr}, () => Array.from({length: nc}, () => []));
      const values = rows[metric];
      for (let i = 0; i < values.length; i++) {
        if (rowAxis !== 'schedule' && rows.schedule[i] !== schedule) continue;
        const r = rowAxis === 'schedule' ? rows.schedule[i] : valueOf(rowAxis, i);
        bins[r][valueOf(colAxis, i)].push(values[i]);
      }
      return bins.map((line) => line.map((b) => ({value: geomean(b), count: b.filter((v) => v !== null).length})));
    }
    if (!metrics.length) {
      notes(['the CSV has no numbers to draw']);
      return;
    }
    const first = metrics[0];
    // Summary: every schedule on every base scenario.
    const summary = el('section', {id: 'summary'}, [el('h2', {text: 'Speed-ups by schedule and scenario'})]);
    const fig1 = figure('heatmap-summary', 'Geometric mean ' + first.label, 'over every grid point of each scenario');
    finish(fig1, heatmap(fig1, s.schedules, s.scenarios, aggregate(first.key, null, 'schedule', -1), first.ratio, 'schedule', 'scenario'));
    summary.append(fig1);
    root.append(summary);
    // Detail: one schedule over two axes the reader picks.
    const detail = el('section', {id: 'detail'}, [el('h2', {text: 'One schedule across the grid'})]);
    const controls = el('div', {class: 'controls'});
    const select = (name, options, value) => {
      const sel = el('select', {name: name}, options.map((o) => el('option', {value: o.value, text: o.label})));
      sel.value = String(value);
      controls.append(el('label', {text: name + ' '}, [sel]));
      return sel;
    };
    const varied = [-1].concat(s.axes.map((_, a) => a)).filter((a) => axisValues(a).length > 1);
    const axisOptions = [-1].concat(s.axes.map((_, a) => a)).map((a) => ({value: a, label: axisName(a)}));
    const best = s.schedules.indexOf('fsmoe') >= 0 ? s.schedules.indexOf('fsmoe') : s.schedules.length - 1;
    const scheduleSel = select('schedule', s.schedules.map((n, i) => ({value: i, label: n})), best);
    const metricSel = select('metric', metrics.map((m, i) => ({value: i, label: m.label})), 0);
    // Default: the two axes along which the schedule's geometric mean moves
    // most (max over min over their values), so the first picture shows what
    // matters; ties keep the sweep's axis order.
    const spread = (a) => {
      const means = aggregate(metrics[0].key, best, 'schedule', a)[best].map((c) => c.value).filter((v) => v !== null);
      return means.length > 1 ? Math.max(...means) / Math.min(...means) : 1;
    };
    const ranked = varied.map((a) => ({a: a, spread: spread(a)})).sort((x, y) => y.spread - x.spread || x.a - y.a);
    const rowSel = select('rows', axisOptions, ranked.length ? ranked[0].a : -1);
    const colSel = select('columns', axisOptions, ranked.length > 1 ? ranked[1].a : -1);
    detail.append(controls);
    const holder = el('div');
    detail.append(holder);
    // An axis' values in numeric order when they are all numbers (the CSV lists them as first met).
    function order(a) {
      const values = a < 0 ? s.scenarios : s.axes[a].values;
      const index = values.map((_, i) => i);
      if (values.every((v) => v.trim() !== '' && isFinite(Number(v)))) index.sort((x, y) => Number(values[x]) - Number(values[y]));
      return index;
    }
    function drawDetail() {
      const m = metrics[Number(metricSel.value)];
      const sched = Number(scheduleSel.value);
      const ra = Number(rowSel.value);
      const ca = Number(colSel.value);
      const fig = figure('heatmap-detail', s.schedules[sched] + ': geometric mean ' + m.label,
        'by ' + axisName(ra) + ' (rows) and ' + axisName(ca) + ' (columns), over the other axes');
      const cells = aggregate(m.key, sched, ra, ca);
      const ro = order(ra);
      const co = order(ca);
      finish(fig, heatmap(fig, ro.map((i) => axisValues(ra)[i]), co.map((j) => axisValues(ca)[j]),
        ro.map((i) => co.map((j) => cells[i][j])), m.ratio, axisName(ra), axisName(ca)));
      holder.replaceChildren(fig);
    }
    for (const sel of [scheduleSel, metricSel, rowSel, colSel]) sel.addEventListener('change', drawDetail);
    drawDetail();
    root.append(detail);
    // Every schedule's geometric-mean speed-ups, as the paper's headline numbers.
    const ratios = metrics.filter((m) => m.ratio);
    if (ratios.length) {
      const section = el('section', {id: 'schedules'}, [el('h2', {text: 'Geometric-mean speed-up by schedule'})]);
      const series = ratios.map((m) => ({name: m.label, values: s.schedules.map((_, k) => geomean(rows[m.key].filter((v, i) => rows.schedule[i] === k)))}));
      section.append(groupedBars('speedup-bars', 'Over all grid points', series, s.schedules));
      root.append(section);
    }
  }

  function groupedBars(name, caption, series, labels) {
    const fig = figure(name, caption, '1.0 = as fast as the baseline');
    fig.append(legend(series.map((t, i) => ({label: t.name, colour: PALETTE[i]}))));
    const labelW = 150;
    const width = 760;
    const groupH = 10 + 14 * series.length;
    const top = 8;
    const height = top + labels.length * groupH + 40;
    const max = Math.max(...series.flatMap((t) => t.values.filter((v) => v !== null)), 1) * 1.05;
    const x = linear(0, max, labelW, width - 60);
    const svg = svgRoot(width, height);
    let marks = 0;
    labels.forEach((label, i) => {
      const y = top + i * groupH;
      svgEl('text', {x: labelW - 8, y: y + groupH / 2 + 3, 'text-anchor': 'end', text: label}, svg);
      series.forEach((t, k) => {
        const v = t.values[i];
        if (v === null) return;
        const rect = svgEl('rect', {class: 'mark', x: labelW, y: y + 4 + 14 * k, width: Math.max(0, x(v) - labelW), height: 12, fill: PALETTE[k], 'data-value': v}, svg);
        titled(rect, label + ': ' + t.name + ' ' + v.toFixed(3) + 'x');
        svgEl('text', {x: x(v) + 4, y: y + 14 + 14 * k, 'font-size': 10, text: v.toFixed(3) + 'x'}, svg);
        marks++;
      });
    });
    const one = x(1);
    svgEl('line', {x1: one, x2: one, y1: top, y2: top + labels.length * groupH, stroke: '#000', 'stroke-dasharray': '4 3'}, svg);
    xAxis(svg, niceTicks(0, max, 6), x, top + labels.length * groupH + 2, top, 'x');
    fig.append(svg);
    return finish(fig, marks);
  }

  document.title = data.title;
  if (data.kind === 'plan') planPage();
  else sweepPage();
  root.dataset.ready = 'true';
})();
