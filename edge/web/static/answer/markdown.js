// Chat answers as SAFE markdown: a small renderer of its own that builds DOM nodes with
// textContent only — raw HTML in the text stays text, always. The subset: paragraphs, line
// breaks, "-"/"*" and "1." lists, ``` code blocks, `code`, **bold**, *italic* / _italic_, and
// [links](https://…) with http or https URLs only (anything else is shown as plain text).

const INLINE = /(`[^`\n]+`)|(\*\*[^*\n]+\*\*)|(\*[^*\n]+\*|\b_[^_\n]+_\b)|(\[[^\]\n]{1,500}\]\((?:[^()\s]|\([^()\s]*\)){1,2000}\))/;

function inline(text, parent) {
  let rest = text;
  while (rest) {
    const m = INLINE.exec(rest);
    if (!m) { parent.append(document.createTextNode(rest)); return; }
    if (m.index) parent.append(document.createTextNode(rest.slice(0, m.index)));
    const tok = m[0];
    if (m[1]) {
      const c = document.createElement('code');
      c.textContent = tok.slice(1, -1);
      parent.append(c);
    } else if (m[2]) {
      const b = document.createElement('strong');
      inline(tok.slice(2, -2), b);
      parent.append(b);
    } else if (m[3]) {
      const i = document.createElement('em');
      inline(tok.slice(1, -1), i);
      parent.append(i);
    } else {
      const close = tok.indexOf('](');
      const label = tok.slice(1, close);
      const href = tok.slice(close + 2, -1);
      let url;
      try { url = new URL(href); } catch { url = undefined; }
      if (url && (url.protocol === 'http:' || url.protocol === 'https:')) {
        const a = document.createElement('a');
        a.href = url.href;
        a.rel = 'noopener noreferrer nofollow';
        a.target = '_blank';
        a.textContent = label;
        parent.append(a);
      } else {
        parent.append(document.createTextNode(tok));
      }
    }
    rest = rest.slice(m.index + tok.length);
  }
}

/** A DocumentFragment for the markdown text. */
export function renderMarkdown(text) {
  const frag = document.createDocumentFragment();
  const lines = String(text ?? '').replace(/\r\n?/g, '\n').split('\n');
  let para = [];
  let list = null;
  const flushPara = () => {
    if (!para.length) return;
    const p = document.createElement('p');
    para.forEach((line, k) => {
      if (k) p.append(document.createElement('br'));
      inline(line, p);
    });
    frag.append(p);
    para = [];
  };
  const flushList = () => { if (list) { frag.append(list); list = null; } };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (/^\s*```/.test(line)) {
      flushPara(); flushList();
      const code = [];
      for (i++; i < lines.length && !/^\s*```/.test(lines[i]); i++) code.push(lines[i]);
      const pre = document.createElement('pre');
      const c = document.createElement('code');
      c.textContent = code.join('\n');
      pre.append(c);
      frag.append(pre);
      continue;
    }
    const bullet = /^\s*[-*]\s+(.*)$/.exec(line);
    const numbered = /^\s*\d{1,3}[.)]\s+(.*)$/.exec(line);
    if (bullet || numbered) {
      flushPara();
      const tag = bullet ? 'UL' : 'OL';
      if (list && list.tagName !== tag) flushList();
      list ??= document.createElement(tag.toLowerCase());
      const li = document.createElement('li');
      inline((bullet ?? numbered)[1], li);
      list.append(li);
      continue;
    }
    if (!line.trim()) { flushPara(); flushList(); continue; }
    flushList();
    const heading = /^#{1,6}\s+(.*)$/.exec(line);
    if (heading) {
      flushPara();
      const h = document.createElement('p');
      const b = document.createElement('strong');
      inline(heading[1], b);
      h.append(b);
      frag.append(h);
      continue;
    }
    para.push(line);
  }
  flushPara(); flushList();
  return frag;
}
