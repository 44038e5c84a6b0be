// Tables: one behaviour for every table the server renders (`views/ui.rs`, `Table`).
// * `table.sortable`, `table.paged`: click a header to sort (cells with `data-v` sort by that
//   number, others by their text, numerically when it is a number); numbers sort largest first
//   on the first click, text A to Z.
// * an `input.table-filter` right before a table hides rows that do not contain its text.
// * `table.paged` shows `data-page` rows at a time under a pager.
// * In every table, a cell of plain text longer than `LONG` characters (a C++ kernel's whole
//   signature runs to 2,000) shows its first two lines; a click shows all of it, and another
//   folds it again. Its text stays whole in the page (the filter, sorting and copying see it).

function sortKey(cell) {
  if (!cell) return '';
  if (cell.dataset.v !== undefined) return +cell.dataset.v;
  const t = cell.textContent.trim();
  const n = parseFloat(t);
  return isNaN(n) || String(n) !== t.replace(/^\+/, '') ? t : n;
}

function compare(x, y) {
  if (typeof x === 'number' && typeof y === 'number') return x - y;
  return String(x).localeCompare(String(y));
}

function setup(table) {
  const body = table.tBodies[0];
  if (!body || !table.tHead) return;
  const per = table.classList.contains('paged') ? (+table.dataset.page || 100) : 0;
  // Rows a trailing summary row (`tr` without cells to sort) stays under.
  let page = 0;
  let query = '';
  const nav = per ? document.createElement('div') : null;
  if (nav) { nav.className = 'pager'; table.after(nav); }

  const show = () => {
    const rows = [...body.rows];
    const matching = rows.filter((r) => !query || r.textContent.toLowerCase().includes(query));
    const keep = new Set(matching);
    if (!per) {
      for (const r of rows) r.hidden = !keep.has(r);
      return;
    }
    const pages = Math.max(1, Math.ceil(matching.length / per));
    page = Math.min(page, pages - 1);
    for (const r of rows) r.hidden = true;
    matching.forEach((r, i) => { r.hidden = Math.floor(i / per) !== page; });
    nav.textContent = `rows ${matching.length ? page * per + 1 : 0}–${Math.min(matching.length, (page + 1) * per)} of ${matching.length} · page ${page + 1} of ${pages} `;
    for (const [label, p] of [['« first', 0], ['‹ prev', page - 1], ['next ›', page + 1], ['last »', pages - 1]]) {
      const b = document.createElement('button');
      b.type = 'button';
      b.textContent = label;
      b.disabled = p < 0 || p >= pages || p === page;
      b.onclick = () => { page = p; show(); };
      nav.append(b);
    }
  };

  table.tHead.addEventListener('click', (e) => {
    const th = e.target.closest('th');
    if (!th) return;
    const i = [...th.parentNode.cells].indexOf(th);
    const rows = [...body.rows];
    const numeric = rows.some((r) => typeof sortKey(r.cells[i]) === 'number');
    const first = numeric ? 'desc' : 'asc';
    const dir = th.dataset.dir ? (th.dataset.dir === 'asc' ? 'desc' : 'asc') : first;
    for (const c of th.parentNode.cells) delete c.dataset.dir;
    th.dataset.dir = dir;
    const sign = dir === 'asc' ? 1 : -1;
    rows.sort((a, b) => sign * compare(sortKey(a.cells[i]), sortKey(b.cells[i])));
    body.append(...rows);
    page = 0;
    show();
  });

  const filter = table.previousElementSibling;
  if (filter && filter.classList.contains('table-filter')) {
    filter.addEventListener('input', () => { query = filter.value.toLowerCase(); page = 0; show(); });
  }
  show();
}

const LONG = 160;

function fold(table) {
  for (const td of table.querySelectorAll('td')) {
    if (td.children.length || td.textContent.length <= LONG) continue;
    const d = document.createElement('div');
    d.className = 'clamp';
    d.title = 'Click to show all of it, again to fold it';
    d.append(...td.childNodes);
    d.addEventListener('click', () => {
      if (!getSelection().toString()) d.classList.toggle('open');
    });
    td.append(d);
  }
}

for (const t of document.querySelectorAll('table')) fold(t);
for (const t of document.querySelectorAll('table.sortable, table.paged')) setup(t);
