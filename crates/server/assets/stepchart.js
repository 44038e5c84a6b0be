// Overview step chart: the server draws each category as one SVG path over every step; hovering
// a step highlights its column and shows its name, step time and breakdown.

/** Picoseconds for people, as the server's fmt_ps writes them. */
export function fmtPs(ps) {
  const a = Math.abs(ps);
  const [div, unit] = a >= 1e12 ? [1e12, 's'] : a >= 1e9 ? [1e9, 'ms'] : a >= 1e6 ? [1e6, 'µs'] : a >= 1e3 ? [1e3, 'ns'] : [1, 'ps'];
  const x = ps / div;
  const digits = Math.abs(x) >= 100 ? 0 : Math.abs(x) >= 10 ? 1 : 2;
  return `${x.toFixed(digits)} ${unit}`;
}

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

for (const chart of document.querySelectorAll('.stepchart')) {
  const svg = chart.querySelector('svg.sc-chart');
  const tip = chart.querySelector('.sc-tip');
  const band = chart.querySelector('.sc-hover');
  let data;
  try { data = JSON.parse(chart.querySelector('script.sc-data').textContent); } catch { continue; }
  const n = data.names.length;
  if (!svg || !tip || !band || !n) continue;
  // The plot's x range in SVG units.
  const x0 = +svg.dataset.x0;
  const x1 = +svg.dataset.x1;
  const step = (x1 - x0) / n;
  let shown = -1;

  const show = (i, ev) => {
    if (i !== shown) {
      shown = i;
      band.setAttribute('x', x0 + i * step);
      band.setAttribute('width', Math.max(step, 1));
      const dur = data.duration_ps[i];
      const rows = [el('div', { class: 'sc-tip-title' }, `${data.names[i]} · ${fmtPs(dur)}`)];
      (data.breakdown_ps[i] || []).forEach((v, c) => {
        if (!v) return;
        const row = el('div');
        const sw = el('i', { style: `background:${data.colors[c % data.colors.length]}` }, '\u00a0\u00a0');
        row.append(sw, ` ${data.categories[c]}: ${fmtPs(v)} (${dur > 0 ? (100 * v / dur).toFixed(1) : '0.0'}%)`);
        rows.push(row);
      });
      tip.replaceChildren(...rows);
      tip.dataset.step = String(i);
    }
    tip.hidden = false;
    const box = chart.getBoundingClientRect();
    const left = ev.clientX - box.left + 12;
    tip.style.left = `${Math.min(left, box.width - tip.offsetWidth - 4)}px`;
    tip.style.top = `${ev.clientY - box.top + 12}px`;
  };

  svg.addEventListener('mousemove', (ev) => {
    const p = svg.createSVGPoint();
    p.x = ev.clientX;
    p.y = ev.clientY;
    const m = svg.getScreenCTM();
    if (!m) return;
    const x = p.matrixTransform(m.inverse()).x;
    const i = Math.floor((x - x0) / step);
    if (i < 0 || i >= n) { tip.hidden = true; band.setAttribute('width', 0); shown = -1; return; }
    show(i, ev);
  });
  svg.addEventListener('mouseleave', () => { tip.hidden = true; band.setAttribute('width', 0); shown = -1; });
}
