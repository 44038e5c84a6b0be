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
