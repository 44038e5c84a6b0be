// xlens trace viewer: a canvas renderer fed by the level-of-detail API (/api/trace/viewport).
// Navigation: W/S zoom at the cursor, A/D pan, wheel scrolls (ctrl/cmd + wheel zooms), drag pans,
// shift + drag selects a time range, click selects an event and pins its details.

const root = document.getElementById('trace');
const params = new URLSearchParams(location.search);
const run = params.get('run') || '';
const host = params.get('host') || '';
const q = (extra) => {
  const p = new URLSearchParams({ run, ...extra });
  if (host) p.set('host', host);
  return p.toString();
};

const ROW = 18, GROUP = 22, RULER = 26, LABEL_W = 260;
const canvas = root.querySelector('canvas');
const ctx = canvas.getContext('2d');
const status = root.querySelector('.tv-status');
const details = document.getElementById('tv-details');
const tooltip = root.querySelector('.tv-tooltip');

const state = {
  data: null,          // last viewport response
  start: 0, end: 1,    // window shown (ps)
  span: [0, 1],
  scrollY: 0,
  collapsed: new Set(), // group names and "t<id>" track ids
  selected: null,      // {track, index}
  range: null,         // [a, b] ps
  mouse: null,         // {x, y}
  layout: [],          // rows: {kind:'group'|'track', y, h, group, track}
  pending: null,
  lastDraw: 0,
};

function fmt(ps) {
  const a = Math.abs(ps);
  if (a >= 1e12) return (ps / 1e12).toFixed(a >= 1e13 ? 2 : 3) + ' s';
  if (a >= 1e9) return (ps / 1e9).toFixed(a >= 1e11 ? 1 : 3) + ' ms';
  if (a >= 1e6) return (ps / 1e6).toFixed(a >= 1e8 ? 1 : 3) + ' µs';
  if (a >= 1e3) return (ps / 1e3).toFixed(1) + ' ns';
  return ps + ' ps';
}

// A ruler label with just enough digits for the tick spacing.
function fmtTick(ps, step) {
  const units = [[1e12, 's'], [1e9, 'ms'], [1e6, 'µs'], [1e3, 'ns'], [1, 'ps']];
  const [div, unit] = units.find(([d]) => Math.abs(ps) >= d || d === 1) || units[4];
  const digits = Math.max(0, Math.min(6, Math.ceil(Math.log10(div / step))));
  return (ps / div).toFixed(digits) + ' ' + unit;
}

function colorOf(name, alpha) {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
  return `hsla(${h % 360}, 55%, ${58 + (h >> 9) % 14}%, ${alpha})`;
}

function resize() {
  const r = root.querySelector('.tv-canvas-wrap').getBoundingClientRect();
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.max(1, Math.floor(r.width * dpr));
  canvas.height = Math.max(1, Math.floor(r.height * dpr));
  canvas.style.width = r.width + 'px';
  canvas.style.height = r.height + 'px';
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
}

const plotW = () => canvas.clientWidth - LABEL_W;
const xOf = (ps) => LABEL_W + (ps - state.start) / (state.end - state.start) * plotW();
const psOf = (x) => state.start + (x - LABEL_W) / plotW() * (state.end - state.start);

async function fetchViewport() {
  if (state.pending) state.pending.abort();
  const ac = new AbortController();
  state.pending = ac;
  const width = Math.max(1, Math.round(plotW()));
  const t0 = performance.now();
  try {
    const r = await fetch('/api/trace/viewport?' + q({ start_ps: Math.floor(state.start), end_ps: Math.ceil(state.end), width }), { signal: ac.signal });
    const j = await r.json();
    if (!r.ok) { status.textContent = j.error || 'error'; return; }
    state.data = j;
    state.fetchMs = performance.now() - t0;
    draw();
    syncUrl();
  } catch (e) {
    if (e.name !== 'AbortError') status.textContent = String(e);
  }
}

// The address bar follows the view (window and selected event), so a copied link reopens it.
let urlTimer = 0;
function syncUrl() {
  clearTimeout(urlTimer);
  urlTimer = setTimeout(() => {
    const u = new URL(location.href);
    u.searchParams.set('start_ps', String(Math.floor(state.start)));
    u.searchParams.set('end_ps', String(Math.ceil(state.end)));
    if (state.selected) u.searchParams.set('event', `${state.selected.track}.${state.selected.index}`);
    else u.searchParams.delete('event');
    history.replaceState(null, '', u);
  }, 150);
}

let fetchTimer = 0;
function refetchSoon() {
  clearTimeout(fetchTimer);
  fetchTimer = setTimeout(fetchViewport, 60);
}

const COUNTER_H = 44;

function computeLayout() {
  const rows = [];
  let y = RULER;
  let lastGroup = null;
  const counters = state.data.counters || [];
  const placed = new Set();
  const addCounters = (group) => {
    if (group == null || state.collapsed.has(group)) return;
    for (const c of counters) {
      if (c.group !== group || placed.has(c.id)) continue;
      placed.add(c.id);
      rows.push({ kind: 'counter', y, h: COUNTER_H, group, counter: c });
      y += COUNTER_H;
    }
  };
  for (const t of state.data.tracks) {
    if (t.group !== lastGroup) {
      addCounters(lastGroup);
      rows.push({ kind: 'group', y, h: GROUP, group: t.group });
      y += GROUP;
      lastGroup = t.group;
    }
    if (state.collapsed.has(t.group)) continue;
    const h = state.collapsed.has('t' + t.id) ? ROW : Math.max(1, t.depths) * ROW;
    rows.push({ kind: 'track', y, h, group: t.group, track: t });
    y += h;
  }
  addCounters(lastGroup);
  for (const c of counters) {
    if (placed.has(c.id)) continue;
    if (c.group !== lastGroup) {
      rows.push({ kind: 'group', y, h: GROUP, group: c.group });
      y += GROUP;
      lastGroup = c.group;
    }
    addCounters(c.group);
  }
  state.layout = rows;
  state.contentH = y;
}

function fmtValue(v) {
  const a = Math.abs(v);
  if (a >= 1 << 30) return (v / (1 << 30)).toFixed(2) + ' GiB';
  if (a >= 1 << 20) return (v / (1 << 20)).toFixed(1) + ' MiB';
  if (a >= 1e4) return v.toExponential(2);
  return String(Math.round(v * 100) / 100);
}

function fmtBytes(v) {
  if (v >= 1 << 30) return (v / (1 << 30)).toFixed(2) + ' GiB';
  if (v >= 1 << 20) return (v / (1 << 20)).toFixed(1) + ' MiB';
  if (v >= 1 << 10) return (v / (1 << 10)).toFixed(1) + ' KiB';
  return v + ' B';
}

function drawCounter(r, sy, W) {
  const c = r.counter;
  const y0 = r.y - sy, h = r.h - 6;
  const span = c.max - Math.min(0, c.min) || 1;
  const yOf = (v) => y0 + 3 + h - (v - Math.min(0, c.min)) / span * h;
  ctx.beginPath();
  let started = false, lastY = yOf(0);
  for (let i = 0; i < c.times_ps.length; i++) {
    const x = Math.max(LABEL_W, xOf(c.times_ps[i]));
    const yy = yOf(c.values[i]);
    if (!started) { ctx.moveTo(x, lastY); started = true; }
    ctx.lineTo(x, lastY); // a counter holds its value until the next point
    ctx.lineTo(x, yy);
    lastY = yy;
  }
  if (started) {
    ctx.lineTo(W, lastY);
    ctx.strokeStyle = '#3a5bd9';
    ctx.lineWidth = 1.2;
    ctx.stroke();
    ctx.lineTo(W, yOf(Math.min(0, c.min)));
    ctx.lineTo(LABEL_W, yOf(Math.min(0, c.min)));
    ctx.fillStyle = 'rgba(58, 91, 217, 0.12)';
    ctx.fill();
  }
}

function rowYOf(track, depth) {
  const r = trackRow(track);
  if (!r) return null;
  return r.y - state.scrollY + (state.collapsed.has('t' + track) ? 0 : depth) * ROW + ROW / 2;
}

function trackRow(id) {
  return state.layout.find((r) => r.kind === 'track' && r.track.id === id);
}

function draw() {
  const t0 = performance.now();
  const W = canvas.clientWidth, H = canvas.clientHeight;
  ctx.clearRect(0, 0, W, H);
  if (!state.data) return;
  computeLayout();
  state.scrollY = Math.max(0, Math.min(state.scrollY, Math.max(0, state.contentH - H + 40)));
  const names = state.data.names;
  // Colours per name, computed once per response.
  if (state.data.colors === undefined) {
    state.data.colors = names.map((n) => colorOf(n, 1));
    state.data.faint = names.map((n) => colorOf(n, 0.45));
  }
  const colors = state.data.colors, faint = state.data.faint;
  const sy = state.scrollY;
  const visible = new Map();
  for (const r of state.layout) {
    if (r.kind === 'track' && r.y - sy + r.h >= RULER && r.y - sy <= H) visible.set(r.track.id, r);
  }
  ctx.save();
  ctx.beginPath();
  ctx.rect(LABEL_W, RULER, W - LABEL_W, H - RULER);
  ctx.clip();
  ctx.font = '11px system-ui, sans-serif';
  ctx.textBaseline = 'middle';
  let drawn = 0;
  for (const r of state.layout) {
    if (r.kind === 'counter' && r.y - sy + r.h >= RULER && r.y - sy <= H) { drawCounter(r, sy, W); drawn++; }
  }
  // Summaries (runs of sub-pixel events): light boxes in the colour of their longest event.
  for (const s of state.data.summaries) {
    const r = visible.get(s.track);
    if (!r) continue;
    if (state.collapsed.has('t' + s.track) && s.depth > 0) continue;
    const x0 = xOf(s.start_ps), x1 = Math.max(xOf(s.end_ps), x0 + 1);
    if (x1 < LABEL_W || x0 > W) continue;
    const y = r.y - sy + s.depth * ROW;
    ctx.fillStyle = faint[s.name];
    ctx.fillRect(x0, y + 2, x1 - x0, ROW - 4);
    drawn++;
  }
  // Events at least about a pixel wide.
  for (const e of state.data.events) {
    const r = visible.get(e.track);
    if (!r) continue;
    if (state.collapsed.has('t' + e.track) && e.depth > 0) continue;
    let x0 = xOf(e.start_ps), x1 = xOf(e.start_ps + e.dur_ps);
    if (x1 < LABEL_W || x0 > W) continue;
    x0 = Math.max(x0, LABEL_W - 2); x1 = Math.min(x1, W + 2);
    const w = Math.max(1, x1 - x0);
    const y = r.y - sy + e.depth * ROW;
    const name = names[e.name];
    const sel = state.selected && state.selected.track === e.track && state.selected.index === e.index;
    ctx.fillStyle = colors[e.name];
    ctx.fillRect(x0, y + 1, w, ROW - 2);
    if (sel) { ctx.strokeStyle = '#111'; ctx.lineWidth = 2; ctx.strokeRect(x0, y + 1, w, ROW - 2); }
    if (w > 30) {
      ctx.fillStyle = '#111';
      const maxChars = Math.floor((w - 6) / 6);
      ctx.fillText(name.length > maxChars ? name.slice(0, Math.max(1, maxChars - 1)) + '…' : name, x0 + 3, y + ROW / 2);
    }
    drawn++;
  }
  // Flow arrows of the selected event.
  if (state.sel && state.flows) {
    ctx.strokeStyle = 'rgba(20, 20, 20, 0.75)';
    ctx.fillStyle = 'rgba(20, 20, 20, 0.75)';
    ctx.lineWidth = 1.2;
    const me = state.sel;
    const yMe = rowYOf(me.track, me.depth);
    for (const f of state.flows) {
      const yO = rowYOf(f.track, f.depth);
      if (yMe == null || yO == null) continue;
      const [x0, y0, x1, y1] = f.direction === 'out'
        ? [xOf(me.start_ps + me.dur_ps), yMe, xOf(f.start_ps), yO]
        : [xOf(f.start_ps + f.dur_ps), yO, xOf(me.start_ps), yMe];
      ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x1, y1); ctx.stroke();
      const a = Math.atan2(y1 - y0, x1 - x0);
      ctx.beginPath();
      ctx.moveTo(x1, y1);
      ctx.lineTo(x1 - 7 * Math.cos(a - 0.4), y1 - 7 * Math.sin(a - 0.4));
      ctx.lineTo(x1 - 7 * Math.cos(a + 0.4), y1 - 7 * Math.sin(a + 0.4));
      ctx.fill();
    }
  }
  // Selected range.
  if (state.range) {
    const [a, b] = state.range;
    ctx.fillStyle = 'rgba(58, 91, 217, 0.12)';
    ctx.fillRect(xOf(a), RULER, xOf(b) - xOf(a), H - RULER);
  }
  ctx.restore();
  // Labels and group headers.
  ctx.font = '12px system-ui, sans-serif';
  for (const r of state.layout) {
    const y = r.y - sy;
    if (y + r.h < RULER || y > H) continue;
    if (r.kind === 'group') {
      ctx.fillStyle = '#eef1f8';
      ctx.fillRect(0, y, W, r.h);
      ctx.fillStyle = '#1d2330';
      ctx.font = 'bold 12px system-ui, sans-serif';
      ctx.fillText((state.collapsed.has(r.group) ? '▸ ' : '▾ ') + r.group, 6, y + r.h / 2);
      ctx.font = '12px system-ui, sans-serif';
    } else if (r.kind === 'counter') {
      ctx.fillStyle = '#fff';
      ctx.fillRect(0, y, LABEL_W - 1, r.h);
      ctx.fillStyle = '#1d2330';
      const name = r.counter.name;
      ctx.fillText(name.length > 38 ? name.slice(0, 37) + '…' : name, 8, y + 12);
      ctx.fillStyle = '#687083';
      const v = r.counter.max;
      ctx.fillText('max ' + (name.startsWith('memory') ? fmtBytes(v) : fmtValue(v)), 8, y + 28);
      ctx.strokeStyle = '#eceef3';
      ctx.beginPath(); ctx.moveTo(0, y + r.h - 0.5); ctx.lineTo(W, y + r.h - 0.5); ctx.stroke();
    } else {
      ctx.fillStyle = '#fff';
      ctx.fillRect(0, y, LABEL_W - 1, r.h);
      ctx.fillStyle = '#1d2330';
      const t = r.track;
      const label = (t.depths > 1 ? (state.collapsed.has('t' + t.id) ? '▸ ' : '▾ ') : '  ') + t.name;
      ctx.fillText(label.length > 38 ? label.slice(0, 37) + '…' : label, 8, y + ROW / 2);
      ctx.strokeStyle = '#eceef3';
      ctx.beginPath(); ctx.moveTo(0, y + r.h - 0.5); ctx.lineTo(W, y + r.h - 0.5); ctx.stroke();
    }
  }
  drawRuler(W);
  const ms = performance.now() - t0;
  state.lastDraw = ms;
  const d = state.data;
  status.textContent = `${fmt(state.end - state.start)} shown · ${d.events.length} events + ${d.summaries.length} merged boxes ` +
    `(${d.summaries.reduce((a, s) => a + s.count, 0)} events narrower than a pixel) of ${d.total_events} in the trace · ` +
    `drawn in ${ms.toFixed(1)} ms · server ${state.fetchMs ? state.fetchMs.toFixed(0) : '?'} ms` + clockNote(d);
  root.dataset.drawn = String(drawn);
  root.dataset.drawMs = ms.toFixed(2);
}

// Several hosts: how their clocks were put on one axis (aligned on the ends of steps and
// collectives they share, or raw), with each host's correction and residual skew in the tooltip.
function clockNote(d) {
  const cs = d.clocks || [];
  if (!cs.length) return '';
  const aligned = cs.filter((c) => c.basis.endsWith(' ends') && !c.basis.startsWith('raw'));
  status.title = cs.map((c) => `${c.host}: ${c.basis}, raw offset ${fmt(c.raw_offset_ps)}, correction ${fmt(c.correction_ps)}, residual ${fmt(c.residual_ps)} over ${c.matched_steps} steps and ${c.matched_collectives} collectives`).join('\n');
  if (!aligned.length) return ` · ${cs.length} hosts on their raw clocks`;
  const worst = aligned.reduce((a, c) => Math.max(a, Math.abs(c.correction_ps)), 0);
  const resid = aligned.reduce((a, c) => Math.max(a, c.residual_ps), 0);
  const on = [...new Set(aligned.map((c) => c.basis))].join(', ');
  return ` · ${cs.length} hosts' clocks aligned on ${on} (${aligned.length} corrected, at most ${fmt(worst)}; residual skew ≤ ${fmt(resid)}; hover for each)`;
}

function drawRuler(W) {
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, W, RULER);
  ctx.strokeStyle = '#c9cedb';
  ctx.beginPath(); ctx.moveTo(0, RULER - 0.5); ctx.lineTo(W, RULER - 0.5); ctx.stroke();
  const span = state.end - state.start;
  const target = span / (plotW() / 110);
  const step = Math.pow(10, Math.ceil(Math.log10(Math.max(1, target))));
  const nice = [step / 5, step / 2, step].find((s) => s >= target) || step;
  ctx.fillStyle = '#687083';
  ctx.font = '11px system-ui, sans-serif';
  const first = Math.ceil(state.start / nice) * nice;
  for (let t = first; t <= state.end; t += nice) {
    const x = xOf(t);
    ctx.beginPath(); ctx.moveTo(x, RULER - 8); ctx.lineTo(x, RULER); ctx.stroke();
    ctx.fillText(fmtTick(t - state.span[0], nice), x + 3, 10);
  }
  ctx.fillStyle = '#1d2330';
  ctx.fillText(run + (host ? ' · ' + host : ''), 6, 10);
}

function hit(x, y) {
  if (!state.data || x < LABEL_W) return null;
  const yy = y + state.scrollY;
  const r = state.layout.find((r) => r.kind === 'track' && yy >= r.y && yy < r.y + r.h);
  if (!r) return null;
  const depth = Math.floor((yy - r.y) / ROW);
  const ps = psOf(x);
  const tol = (state.end - state.start) / plotW() * 2;
  let best = null;
  for (const e of state.data.events) {
    if (e.track !== r.track.id || e.depth !== depth) continue;
    if (ps >= e.start_ps - tol && ps <= e.start_ps + e.dur_ps + tol) { best = { type: 'event', e }; break; }
  }
  if (!best) {
    for (const s of state.data.summaries) {
      if (s.track === r.track.id && s.depth === depth && ps >= s.start_ps - tol && ps <= s.end_ps + tol) { best = { type: 'summary', s }; break; }
    }
  }
  return best;
}

function zoom(factor, atX) {
  const x = atX == null ? LABEL_W + plotW() / 2 : atX;
  const at = psOf(x);
  let span = (state.end - state.start) * factor;
  span = Math.max(span, 1000); // 1 ns
  const frac = (x - LABEL_W) / plotW();
  state.start = at - span * frac;
  state.end = state.start + span;
  draw();
  refetchSoon();
}

function pan(frac) {
  const d = (state.end - state.start) * frac;
  state.start += d; state.end += d;
  draw();
  refetchSoon();
}

function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}

async function select(track, index) {
  state.selected = { track, index };
  state.flows = null;
  draw();
  syncUrl();
  const r = await fetch('/api/trace/event?' + q({ track, index }));
  const d = await r.json();
  if (!r.ok) { details.innerHTML = `<div class="error">${esc(d.error)}</div>`; return; }
  const rows = d.stats.map(([k, v]) => `<tr><th>${esc(k)}</th><td class="name">${esc(v)}</td></tr>`).join('');
  state.sel = { track: d.track, depth: d.depth, start_ps: d.start_ps, dur_ps: d.dur_ps };
  state.flows = d.flows;
  draw();
  const flows = d.flows.map((f, i) => `<li>${f.direction === 'out' ? '→' : '←'} <a href="#" data-flow="${i}">${esc(f.name)}</a> <span class="dim">${esc(f.kind)} ${f.id}</span></li>`).join('');
  // XLA ops (an `hlo_op` stat on CPU threads, the `XLA Ops` line on devices) link to their HLO graph.
  const stat = (k) => (d.stats.find(([sk]) => sk === k) || [])[1];
  const hloOp = stat('hlo_op') || (d.line === 'XLA Ops' ? d.name : '');
  const hloModule = stat('hlo_module') || '';
  const graphQ = new URLSearchParams({ run, tool: 'graph_viewer', op: hloOp });
  if (host) graphQ.set('host', host);
  if (hloModule) graphQ.set('module', hloModule);
  const graph = hloOp ? `<p><a class="tv-graph" href="/?${graphQ}">HLO graph around ${esc(hloOp)}</a></p>` : '';
  details.innerHTML = `<h3 class="tv-name">${esc(d.name)}</h3>
    ${d.long_name && d.long_name !== d.name ? `<pre class="tv-long">${esc(d.long_name)}</pre>` : ''}
    <table class="kv"><tr><th>Track</th><td>${esc(d.plane)} · ${esc(d.line)}</td></tr>
    <tr><th>Start</th><td>${fmt(d.start_ps - state.span[0])} from trace start</td></tr>
    <tr><th>Duration</th><td>${fmt(d.dur_ps)}</td></tr>
    <tr><th>Self time</th><td>${fmt(d.self_ps)}</td></tr>
    <tr><th>Depth</th><td>${d.depth}</td></tr>
    ${d.step ? `<tr><th>Step</th><td>${esc(d.step)}</td></tr>` : ''}
    ${d.source ? `<tr><th>Source</th><td class="name">${esc(d.source)}</td></tr>` : ''}
    ${rows}</table>
    ${graph}
    ${flows ? `<h4>Flows</h4><ul class="tv-flows">${flows}</ul>` : ''}`;
  details.dataset.name = d.name;
  details.querySelectorAll('a[data-flow]').forEach((a) => a.addEventListener('click', (ev) => {
    ev.preventDefault();
    const f = d.flows[Number(a.dataset.flow)];
    const lo = Math.min(f.start_ps, d.start_ps), hi = Math.max(f.start_ps + f.dur_ps, d.start_ps + d.dur_ps);
    const pad = Math.max(hi - lo, 1000) * 0.2;
    state.start = lo - pad; state.end = hi + pad;
    select(f.track, f.index);
    fetchViewport();
  }));
}

async function showRange(a, b) {
  state.range = [Math.min(a, b), Math.max(a, b)];
  draw();
  const [s, e] = state.range;
  const r = await fetch('/api/trace/range?' + q({ start_ps: Math.floor(s), end_ps: Math.ceil(e) }));
  const d = await r.json();
  const rows = d.rows.map((x) => `<tr><td class="name">${esc(x.name)}</td><td class="num">${x.occurrences}</td><td class="num">${fmt(x.time_ps)}</td></tr>`).join('');
  details.innerHTML = `<h3>Range: ${fmt(e - s)}</h3><p class="dim">${fmt(s - state.span[0])} → ${fmt(e - state.span[0])} · ${d.events} events ·
    <a href="/api/trace/export?${q({ start_ps: Math.floor(s), end_ps: Math.ceil(e) })}">export range (Chrome JSON)</a></p>
    <table class="ops"><thead><tr><th>Name</th><th class="num">Events</th><th class="num">Time in range</th></tr></thead><tbody>${rows}</tbody></table>`;
}

// Input.
let drag = null;
canvas.addEventListener('mousedown', (ev) => {
  drag = { x: ev.offsetX, y: ev.offsetY, start: state.start, end: state.end, scrollY: state.scrollY, moved: false, shift: ev.shiftKey };
});
window.addEventListener('mouseup', (ev) => {
  if (!drag) return;
  const d = drag;
  drag = null;
  if (d.moved) {
    if (d.shift) showRange(psOf(d.x), psOf(ev.offsetX));
    else refetchSoon();
    return;
  }
  // A click: group/track label toggles collapse; an event selects it.
  const yy = d.y + state.scrollY;
  const r = state.layout.find((r) => yy >= r.y && yy < r.y + r.h);
  if (r && r.kind === 'counter') return;
  if (r && (r.kind === 'group' || d.x < LABEL_W)) {
    const key = r.kind === 'group' ? r.group : 't' + r.track.id;
    if (state.collapsed.has(key)) state.collapsed.delete(key); else state.collapsed.add(key);
    draw();
    return;
  }
  const h = hit(d.x, d.y);
  if (h && h.type === 'event') select(h.e.track, h.e.index);
  else if (h && h.type === 'summary') { state.start = h.s.start_ps; state.end = Math.max(h.s.end_ps, h.s.start_ps + 1000); draw(); refetchSoon(); }
});
canvas.addEventListener('mousemove', (ev) => {
  state.mouse = { x: ev.offsetX, y: ev.offsetY };
  if (drag) {
    const dx = ev.offsetX - drag.x, dy = ev.offsetY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
    if (drag.moved && !drag.shift) {
      const dps = dx / plotW() * (drag.end - drag.start);
      state.start = drag.start - dps; state.end = drag.end - dps;
      state.scrollY = drag.scrollY - dy;
      draw();
    } else if (drag.moved && drag.shift) {
      state.range = [psOf(drag.x), psOf(ev.offsetX)].sort((a, b) => a - b);
      draw();
    }
    return;
  }
  const h = hit(ev.offsetX, ev.offsetY);
  if (!h) { tooltip.hidden = true; return; }
  tooltip.hidden = false;
  tooltip.style.left = (ev.offsetX + 14) + 'px';
  tooltip.style.top = (ev.offsetY + 14) + 'px';
  const names = state.data.names;
  tooltip.textContent = h.type === 'event'
    ? `${names[h.e.name]} · ${fmt(h.e.dur_ps)}`
    : `${h.s.count} events (${fmt(h.s.covered_ps)} covered), longest: ${names[h.s.name]} — click to zoom`;
});
canvas.addEventListener('mouseleave', () => { tooltip.hidden = true; });
canvas.addEventListener('wheel', (ev) => {
  ev.preventDefault();
  if (ev.ctrlKey || ev.metaKey) zoom(Math.exp(ev.deltaY * 0.01), ev.offsetX);
  else if (Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) pan(ev.deltaX / plotW());
  else { state.scrollY += ev.deltaY; draw(); }
}, { passive: false });
window.addEventListener('keydown', (ev) => {
  if (ev.target instanceof HTMLInputElement) return;
  const x = state.mouse ? state.mouse.x : null;
  const k = ev.key.toLowerCase();
  if (k === 'w') zoom(0.8, x);
  else if (k === 's') zoom(1.25, x);
  else if (k === 'a') pan(-0.1);
  else if (k === 'd') pan(0.1);
  else if (k === 'f' && state.selected) {
    const e = state.data.events.find((e) => e.track === state.selected.track && e.index === state.selected.index);
    if (e) { state.start = e.start_ps - e.dur_ps * 0.1; state.end = e.start_ps + e.dur_ps * 1.1; draw(); refetchSoon(); }
  } else if (k === '0') { state.start = state.span[0]; state.end = state.span[1]; draw(); refetchSoon(); }
  else return;
  ev.preventDefault();
});
window.addEventListener('resize', () => { resize(); draw(); refetchSoon(); });

// Search over the whole trace (server side), jump to each hit.
const form = root.querySelector('.tv-search');
const results = root.querySelector('.tv-results');
form.addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const text = form.querySelector('input').value.trim();
  if (!text) { results.innerHTML = ''; return; }
  const r = await fetch('/api/trace/search?' + q({ q: text, limit: 200 }));
  const d = await r.json();
  const items = d.hits.map((h, i) => `<li><a href="#" data-i="${i}">${esc(h.name)}</a> <span class="dim">${fmt(h.start_ps - state.span[0])} · ${fmt(h.dur_ps)}</span></li>`).join('');
  results.innerHTML = `<p class="dim">${d.total} matches${d.total > d.shown ? `, first ${d.shown} listed` : ''}</p><ol>${items}</ol>`;
  results.querySelectorAll('a').forEach((a) => a.addEventListener('click', (e) => {
    e.preventDefault();
    const h = d.hits[Number(a.dataset.i)];
    const pad = Math.max(h.dur_ps, 1000) * 2;
    state.start = h.start_ps - pad; state.end = h.start_ps + h.dur_ps + pad;
    const row = trackRow(h.track);
    if (row) state.scrollY = row.y - RULER - 40;
    state.collapsed.delete('t' + h.track);
    select(h.track, h.index);
    fetchViewport();
  }));
});

// For tests and the console: the renderer's state and coordinate mapping.
window.xlensTrace = {
  state,
  xOf,
  select,
  rowY: (track, depth) => { const r = trackRow(track); return r ? r.y - state.scrollY + depth * ROW + ROW / 2 : null; },
};

// Start: the window of the link (`start_ps`/`end_ps`, e.g. a step the advice names), else the
// whole trace.
(async () => {
  root.querySelector('.tv-export').href = '/api/trace/export?' + q({});
  resize();
  const want = { width: Math.max(1, Math.round(plotW())) };
  const [s0, s1] = [Number(params.get('start_ps')), Number(params.get('end_ps'))];
  const windowed = params.has('start_ps') && params.has('end_ps') && Number.isFinite(s0) && s1 > s0;
  if (windowed) { want.start_ps = Math.floor(s0); want.end_ps = Math.ceil(s1); }
  const r = await fetch('/api/trace/viewport?' + q(want));
  const j = await r.json();
  if (!r.ok) { status.textContent = j.error || 'error'; return; }
  state.span = [j.span_start_ps, j.span_end_ps];
  state.start = j.start_ps; state.end = j.end_ps;
  state.data = j;
  draw();
  // The selected event of the link (`event=TRACK.INDEX`).
  const ev = /^(\d+)\.(\d+)$/.exec(params.get('event') || '');
  if (ev) select(Number(ev[1]), Number(ev[2]));
})();
