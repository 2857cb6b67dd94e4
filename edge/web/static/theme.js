// The theme chosen with the toggle (kept in localStorage), set before the page paints; without a
// choice the page follows prefers-color-scheme (style.css). Every page of Cortado loads it, so a
// choice made on one (the dashboard's toggle) applies to the others, the pages the dashboard shows
// in iframes included: they follow the change at once (the `storage` event), and a page that draws
// with the theme's colours listens for `cortado:theme`. A classic script: no module, no globals.
(function () {
  function apply() {
    var t = null;
    try {
      t = localStorage.getItem('cortado.theme');
    } catch (e) {
      // storage refused (private mode): the system's theme
    }
    if (t === 'dark' || t === 'light') document.documentElement.dataset.theme = t;
    else delete document.documentElement.dataset.theme;
  }
  apply();
  addEventListener('storage', function (e) {
    if (e.key !== 'cortado.theme' && e.key !== null) return;
    apply();
    dispatchEvent(new Event('cortado:theme'));
  });
})();
