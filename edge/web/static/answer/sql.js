// SQL highlighting: a small tokenizer of its own (keywords, strings, quoted names, numbers,
// comments, operators), written into spans with textContent. It only colours text: it decides
// nothing about the SQL (the server's guard does that).

const KEYWORDS = new Set(`select from where group by order having limit offset join left right inner outer full cross on as and or not
in is null like ilike between case when then else end distinct union all intersect except with recursive over partition window asc desc
nulls first last fetch next rows row only top count sum avg min max cast coalesce extract interval date timestamp true false exists any
some lateral using natural filter within date_trunc current_date current_timestamp now values`.split(/\s+/));

/** [{type: 'kw'|'str'|'id'|'num'|'com'|'op'|'ws'|'word', text}] covering the whole input. */
export function tokenize(sql) {
  const out = [];
  let i = 0;
  const n = sql.length;
  const push = (type, end) => { out.push({ type, text: sql.slice(i, end) }); i = end; };
  while (i < n) {
    const c = sql[i];
    const d = sql[i + 1];
    if (c === '-' && d === '-') {
      const e = sql.indexOf('\n', i);
      push('com', e < 0 ? n : e);
    } else if (c === '/' && d === '*') {
      const e = sql.indexOf('*/', i + 2);
      push('com', e < 0 ? n : e + 2);
    } else if (c === "'" || c === '"' || c === '`') {
      let j = i + 1;
      while (j < n) {
        if (sql[j] === c) {
          if (sql[j + 1] === c) { j += 2; continue; }
          j++;
          break;
        }
        if (sql[j] === '\\' && c === "'") j++;
        j++;
      }
      push(c === "'" ? 'str' : 'id', Math.min(j, n));
    } else if (/\s/.test(c)) {
      let j = i + 1;
      while (j < n && /\s/.test(sql[j])) j++;
      push('ws', j);
    } else if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(d ?? ''))) {
      const m = /^(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/.exec(sql.slice(i, i + 64));
      push('num', i + (m ? m[0].length : 1));
    } else if (/[A-Za-z_]/.test(c)) {
      let j = i + 1;
      while (j < n && /[A-Za-z0-9_$]/.test(sql[j])) j++;
      push(KEYWORDS.has(sql.slice(i, j).toLowerCase()) ? 'kw' : 'word', j);
    } else {
      push('op', i + 1);
    }
  }
  return out;
}

/** A DocumentFragment of the SQL with one span per coloured token. */
export function highlight(sql) {
  const frag = document.createDocumentFragment();
  for (const t of tokenize(sql)) {
    if (t.type === 'ws' || t.type === 'word' || t.type === 'op') frag.append(document.createTextNode(t.text));
    else {
      const s = document.createElement('span');
      s.className = `tok-${t.type}`;
      s.textContent = t.text;
      frag.append(s);
    }
  }
  return frag;
}
