/* d2lmini book: sidebar toggles that work at every width (added by _ext/d2lbook.py).
   sphinx-book-theme 1.3 with pydata-sphinx-theme >= 0.16 renders two sets of toggles
   and binds the hidden one (upstream sphinx-book-theme #917/#999).  Here one capture
   listener handles every toggle: on a wide screen it hides/shows the sidebar in
   place; where the sidebar is hidden (a phone) it opens it as a drawer. */
(function () {
  var body = document.body, backdrop = null;
  var SIDEBAR = {primary: "#pst-primary-sidebar", secondary: "#pst-secondary-sidebar"};
  function shown(el) {
    if (!el) return false;
    var cs = getComputedStyle(el), r = el.getBoundingClientRect();
    return cs.display !== "none" && cs.visibility !== "hidden" && r.width > 0 &&
           r.right > 0 && r.left < window.innerWidth;
  }
  function close() {
    body.classList.remove("d2l-show-primary", "d2l-show-secondary");
    if (backdrop) { backdrop.remove(); backdrop = null; }
  }
  function open(which) {
    close();
    body.classList.add("d2l-show-" + which);
    backdrop = document.createElement("div");
    backdrop.className = "d2l-backdrop";
    backdrop.addEventListener("click", close);
    body.appendChild(backdrop);
    var el = document.querySelector(SIDEBAR[which]);
    var link = el && el.querySelector("a.current, a");
    if (link) link.focus({preventScroll: true});
  }
  function toggle(which) {
    var el = document.querySelector(SIDEBAR[which]);
    if (body.classList.contains("d2l-show-" + which)) return close();
    if (body.classList.contains("d2l-hide-" + which)) return body.classList.remove("d2l-hide-" + which);
    if (shown(el)) return body.classList.add("d2l-hide-" + which);
    open(which);
  }
  document.addEventListener("click", function (ev) {
    var t = ev.target.closest && ev.target.closest(".primary-toggle, .secondary-toggle");
    if (t) {
      ev.preventDefault();
      ev.stopImmediatePropagation();
      return toggle(t.classList.contains("primary-toggle") ? "primary" : "secondary");
    }
    if (backdrop && ev.target.closest && ev.target.closest(".bd-sidebar a")) close();
  }, true);
  document.addEventListener("keydown", function (ev) { if (ev.key === "Escape") close(); });
})();
