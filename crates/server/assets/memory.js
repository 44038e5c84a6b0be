// Memory viewer: module selector, hover highlight of a buffer (bar and table row together), and a
// details panel pinned by a click that keeps its text selectable until another buffer is clicked.

// Changing the module reloads the page with `module=` (and the nav form's run / tool / host).
for (const sel of document.querySelectorAll('select.mv-module')) {
  sel.addEventListener('change', () => {
    const nav = document.getElementById('nav');
    const params = nav ? new URLSearchParams(new FormData(nav)) : new URLSearchParams(location.search);
    params.set('module', sel.value);
    for (const [k, v] of [...params]) if (!v) params.delete(k);
    location.search = params.toString();
  });
}

const FIELDS = [
  ['Shape', 'shape'], ['Type', 'dtype'], ['Size', 'size'], ['Unpadded', 'unpadded'],
  ['Category', 'category'], ['Op name', 'op_name'], ['Source', 'source'],
  ['Defining instruction', 'instruction'], ['Opcode', 'opcode'], ['Lifetime', 'lifetime'],
  ['Logical buffer', 'logical_buffer_id'], ['Allocation', 'allocation_index'],
];

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function details(b) {
  const box = document.createDocumentFragment();
  box.append(el('h4', { class: 'mv-d-title' }, `${b.instruction} · ${b.size}`));
  const t = el('table', { class: 'kv' });
  for (const [label, key] of FIELDS) {
    const v = b[key];
    if (v === '' || v === undefined || v === null) continue;
    const tr = el('tr');
    tr.append(el('th', {}, label), el('td', { class: `mv-d-${key}` }, String(v)));
    t.append(tr);
  }
  box.append(t);
  if (b.stack) box.append(el('pre', { class: 'tv-long' }, b.stack));
  return box;
}

for (const host of document.querySelectorAll('.mv-host')) {
  const dataEl = host.querySelector('script.mv-data');
  const panel = host.querySelector('.mv-details');
  if (!dataEl || !panel) continue;
  let data = [];
  try { data = JSON.parse(dataEl.textContent); } catch { continue; }
  const items = (i) => host.querySelectorAll(`[data-b="${i}"]`);
  let hovered = null;
  let pinned = null;
  const setClass = (i, cls, on) => { if (i !== null) for (const e of items(i)) e.classList.toggle(cls, on); };
  host.addEventListener('mouseover', (ev) => {
    const t = ev.target.closest('[data-b]');
    const i = t ? t.dataset.b : null;
    if (i === hovered) return;
    setClass(hovered, 'hi', false);
    hovered = i;
    setClass(hovered, 'hi', true);
  });
  host.addEventListener('mouseleave', () => { setClass(hovered, 'hi', false); hovered = null; });
  host.addEventListener('click', (ev) => {
    const t = ev.target.closest('[data-b]');
    if (!t) return; // clicks elsewhere (e.g. selecting text in the panel) keep the pinned details
    const i = t.dataset.b;
    const b = data[Number(i)];
    if (!b) return;
    setClass(pinned, 'pinned', false);
    pinned = i;
    setClass(pinned, 'pinned', true);
    panel.replaceChildren(details(b));
    panel.dataset.pinned = i;
  });
}
