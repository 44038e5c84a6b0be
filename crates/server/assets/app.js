// Page shell behaviour: changing a selector navigates to the deep-linkable URL of that view.
const form = document.getElementById('nav');
if (form) {
  for (const sel of form.querySelectorAll('select')) {
    sel.addEventListener('change', () => {
      if (sel.name === 'run') {
        // Hosts differ between runs: drop the host filter when the run changes.
        const host = form.querySelector('select[name=host]');
        if (host) host.value = '';
      }
      const params = new URLSearchParams(new FormData(form));
      for (const [k, v] of [...params]) if (!v) params.delete(k);
      location.search = params.toString();
    });
  }
}

// Tables: click a header to sort; the filter box above a table hides rows that do not match.
for (const table of document.querySelectorAll('table.sortable')) {
  table.querySelectorAll('th').forEach((th, i) => th.addEventListener('click', () => {
    const body = table.tBodies[0];
    const dir = th.dataset.dir === 'asc' ? -1 : 1;
    th.dataset.dir = dir === 1 ? 'asc' : 'desc';
    const key = (tr) => tr.cells[i]?.textContent ?? '';
    const rows = [...body.rows].sort((a, b) => {
      const x = parseFloat(key(a)), y = parseFloat(key(b));
      return dir * (isNaN(x) || isNaN(y) ? key(a).localeCompare(key(b)) : x - y);
    });
    body.append(...rows);
  }));
  const filter = table.previousElementSibling;
  if (filter && filter.classList.contains('table-filter')) {
    filter.addEventListener('input', () => {
      const q = filter.value.toLowerCase();
      for (const tr of table.tBodies[0].rows) tr.hidden = q && !tr.textContent.toLowerCase().includes(q);
    });
  }
}
