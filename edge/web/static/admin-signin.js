// What the administrator's pages (/admin, /analytics, /ops) share: reading JSON that may fail, showing
// one of their sections, and the sign-in form (POST /admin/login, then load again).
export const $ = (s, r = document) => r.querySelector(s);

/** GET a JSON body; a network failure reads as status 0 with a NETWORK error. */
export async function getJson(url) {
  const res = await fetch(url, { headers: { accept: 'application/json' } }).catch((e) => ({ ok: false, status: 0, json: async () => ({ error: { code: 'NETWORK', message: e.message } }) }));
  return { res, body: await res.json().catch(() => ({})) };
}

/** Shows the section `id` among `ids`, hiding the others. */
export function showOnly(ids, id) {
  for (const s of ids) $(`#${s}`).hidden = s !== id;
}

/** The #login-form signs in as administrator and calls `load` again; its errors show in #login-error. */
export function wireSignIn(load) {
  $('#login-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const res = await fetch('/admin/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: $('#username').value, password: $('#password').value }) });
    if (!res.ok) {
      const body = await res.json().catch(() => ({}));
      $('#login-error').hidden = false;
      $('#login-error').textContent = body.error?.message ?? 'Sign-in failed.';
      return;
    }
    $('#password').value = '';
    $('#login-error').hidden = true;
    await load();
  });
}
