// /demo: the snippet to copy, with this Cortado's own address in it.
(function () {
  const origin = location.origin;
  const snippet = [
    `<script src="${origin}/widget.js" data-cortado-widget="assistant" defer></script>`,
    `<script src="${origin}/widget.js" data-cortado-widget="agent" defer></script>`,
  ].join('\n');
  const pre = document.getElementById('snippet');
  const status = document.getElementById('copy-status');
  pre.textContent = snippet;
  document.getElementById('copy-snippet').addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(snippet);
      status.textContent = 'Copied.';
    } catch {
      // no clipboard permission: select the text so Ctrl+C copies it
      const range = document.createRange();
      range.selectNodeContents(pre);
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      status.textContent = 'Selected: press Ctrl+C (or Cmd+C) to copy.';
    }
  });
})();
