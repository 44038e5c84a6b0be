// Page shell behaviour: changing a selector navigates to the deep-linkable URL of that view.
import './tables.js';

const form = document.getElementById('nav');

/** Navigates to the nav form's view, leaving out empty fields. */
function go() {
  const params = new URLSearchParams(new FormData(form));
  for (const [k, v] of [...params]) if (!v) params.delete(k);
  location.search = params.toString();
}

if (form) {
  for (const sel of form.querySelectorAll('select')) {
    sel.addEventListener('change', () => {
      if (sel.name === 'run') {
        // Hosts differ between runs: drop the host filter when the run changes.
        const host = form.querySelector('select[name=host]');
        if (host) host.value = '';
      }
      go();
    });
  }
}

// "Copy link": the address bar holds the whole view (the trace viewer keeps its window and
// selection there), never a token (the server drops it after the first visit). The link is also
// shown selected, for browsers that refuse the clipboard on plain http.
const copy = document.getElementById('copy-link');
const shareUrl = document.getElementById('share-url');
if (copy && shareUrl) {
  copy.addEventListener('click', async () => {
    const url = location.href;
    shareUrl.value = url;
    shareUrl.hidden = false;
    shareUrl.select();
    let ok = false;
    try {
      await navigator.clipboard.writeText(url);
      ok = true;
    } catch (e) {
      ok = document.execCommand && document.execCommand('copy');
    }
    copy.textContent = ok ? 'Copied' : 'Copy the link';
    setTimeout(() => { copy.textContent = 'Copy link'; }, 2000);
  });
}

// Op details (op profile): the open op is part of the address (`op=`, with `program=` when the
// name is in several programs), so a copied link opens it again; on load, the op of the address
// is opened, its table filtered to it (it may be on another page) and scrolled to.
{
  const here = new URLSearchParams(location.search);
  const want = here.get('op');
  const program = here.get('program');
  let shown = false;
  for (const d of document.querySelectorAll('details[data-op]')) {
    if (!shown && want && d.dataset.op === want && (!program || d.dataset.program === program)) {
      shown = true;
      // Open it and the tree nodes around it.
      for (let p = d; p; p = p.parentElement?.closest('details')) p.open = true;
      const table = d.closest('table');
      const filter = table && table.previousElementSibling;
      if (filter && filter.matches('input.table-filter') && d.closest('tr')?.hidden) {
        filter.value = want;
        filter.dispatchEvent(new Event('input'));
      }
      d.scrollIntoView({ block: 'center' });
    }
    d.addEventListener('toggle', () => {
      const u = new URL(location.href);
      if (d.open) {
        u.searchParams.set('op', d.dataset.op);
        u.searchParams.set('program', d.dataset.program);
      } else if (u.searchParams.get('op') === d.dataset.op) {
        u.searchParams.delete('op');
        u.searchParams.delete('program');
      }
      history.replaceState(null, '', u);
    });
  }
}

// Selectors of a view's own options (op profile grouping, roofline step) submit their form.
for (const sel of document.querySelectorAll('select.autosubmit')) {
  sel.addEventListener('change', () => sel.form?.submit());
}

// A run still coming from a bucket: show each file's download and reload once it is loaded.
const fetching = document.getElementById('fetching');
if (fetching) {
  const q = new URLSearchParams({ run: fetching.dataset.run || '' });
  if (fetching.dataset.host) q.set('host', fetching.dataset.host);
  const bar = document.getElementById('fetch-progress');
  const list = document.getElementById('fetch-files');
  const mb = (n) => (n / 1e6).toFixed(1);
  const poll = async () => {
    try {
      const r = await (await fetch(`/api/downloads?${q}`)).json();
      if (r.ready) {
        location.reload();
        return;
      }
      let done = 0;
      let total = 0;
      list.replaceChildren(...r.downloads.map((d) => {
        done += d.done;
        total += d.total;
        const li = document.createElement('li');
        li.textContent = `${d.url}: ${mb(d.done)} of ${mb(d.total)} MB`;
        return li;
      }));
      if (total > 0) {
        bar.max = total;
        bar.value = done;
      } else {
        bar.removeAttribute('value');
      }
    } catch (e) {
      // The server is busy or restarting: try again.
    }
    setTimeout(poll, 250);
  };
  poll();
}
