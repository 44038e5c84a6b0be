// The capture page: posts the form to the capture API as JSON, shows progress, then opens the
// new session.
const $ = (id) => document.getElementById(id);

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function bar(s) {
  const w = 30;
  const f = s.window_s > 0 ? Math.min(1, s.elapsed_s / s.window_s) : 1;
  const n = Math.round(f * w);
  return `[${'#'.repeat(n)}${'.'.repeat(w - n)}] ${s.elapsed_s.toFixed(1)}s / ${s.window_s.toFixed(1)}s ${s.phase} (${s.hosts_done}/${s.hosts} hosts done)`;
}

const form = $('f');
form.addEventListener('submit', async (ev) => {
  ev.preventDefault();
  $('go').disabled = true;
  const body = {
    addrs: $('addrs').value,
    duration_ms: Math.round(parseFloat($('duration').value) * 1000),
    session: $('session').value || null,
    host_tracer_level: +$('host').value,
    device_tracer_level: +$('device').value,
    python_tracer_level: +$('python').value,
    delay_ms: +$('delay').value,
  };
  const out = $('out');
  const r = await fetch(form.action, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const j = await r.json();
  if (!r.ok) {
    out.replaceChildren(el('p', 'err', j.error));
    $('go').disabled = false;
    return;
  }
  const poll = async () => {
    const s = await (await fetch(`${form.action}/${j.job}`)).json();
    const parts = [el('p', 'bar', bar(s))];
    if (s.done) {
      if (s.error) parts.push(el('p', 'err', s.error));
      for (const x of s.results) {
        parts.push(x.ok ? el('p', 'ok', `${x.addr}: ${x.file} (${x.bytes} bytes)`) : el('p', 'err', x.error));
      }
      if (s.link) {
        const a = el('a', null, `Open session ${s.session}`);
        a.id = 'open';
        a.href = s.link;
        const p = el('p');
        p.append(a);
        parts.push(p);
      }
      out.replaceChildren(...parts);
      $('go').disabled = false;
      if (s.link && s.results.every((x) => x.ok)) window.location.href = s.link;
      return;
    }
    out.replaceChildren(...parts);
    setTimeout(poll, 200);
  };
  poll();
});
