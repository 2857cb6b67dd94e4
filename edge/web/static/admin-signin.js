// What the administrator's pages (/analytics, /ops) share: showing one of their sections, and the
// sign-in form (POST /admin/login, then load again).
import { createApi, readableMessage } from './lib/api.js';
import { $ } from './lib/dom.js';

/** Shows the section `id` among `ids`, hiding the others. */
export function showOnly(ids, id) {
  for (const s of ids) $(`#${s}`).hidden = s !== id;
}

/** The #login-form signs in as administrator and calls `load` again; its errors show in #login-error. */
export function wireSignIn(load) {
  const api = createApi();
  $('#login-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    try {
      await api.post('/admin/login', { username: $('#username').value, password: $('#password').value });
    } catch (err) {
      $('#login-error').hidden = false;
      $('#login-error').textContent = err.status === 401 ? err.message : readableMessage(err);
      return;
    }
    $('#password').value = '';
    $('#login-error').hidden = true;
    await load();
  });
}
