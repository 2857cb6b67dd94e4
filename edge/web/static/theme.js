// The theme chosen with the toggle (kept in localStorage), set before the page paints; without a
// choice the page follows prefers-color-scheme (style.css). A classic script: no module, no globals.
(function () {
  try {
    var t = localStorage.getItem('cortado.theme');
    if (t === 'dark' || t === 'light') document.documentElement.dataset.theme = t;
  } catch (e) {
    // storage refused (private mode): the system's theme
  }
})();
