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

// Selectors of a view's own options (op profile grouping, roofline step) submit their form.
for (const sel of document.querySelectorAll('select.autosubmit')) {
  sel.addEventListener('change', () => sel.form?.submit());
}
