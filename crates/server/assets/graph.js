// Graph viewer: clicking an op (a node of the drawing, a candidate, an "also in" link) shows
// that op, through the page's nav form so the run and host stay selected.
const section = document.querySelector('section.graph');
section?.addEventListener('click', (e) => {
  const t = e.target.closest('[data-op]');
  if (!t) return;
  const f = document.getElementById('nav');
  if (!f) return;
  // The search fields sit outside the form (form="nav"): reach them through its elements.
  const op = f.elements.namedItem('op');
  const module = f.elements.namedItem('module');
  if (!op || !module) return;
  e.preventDefault();
  op.value = t.dataset.op;
  module.value = t.dataset.module || section.dataset.module || '';
  const p = new URLSearchParams(new FormData(f));
  for (const [k, v] of [...p]) if (!v) p.delete(k);
  location.search = p.toString();
});
