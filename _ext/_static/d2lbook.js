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

/* Search results: the snippet under each hit is the page's text, where formulas are
   still TeX source (MathJax typesets them in the page, not in the snippet).  Show them
   as plain text: \(\sqrt{d_k}\) -> √d_k, \mathbf{W}^\top -> Wᵀ. */
(function () {
  var SYMBOLS = {cdot: "·", times: "×", top: "ᵀ", in: "∈", le: "≤", leq: "≤", ge: "≥", geq: "≥",
    ne: "≠", neq: "≠", approx: "≈", sum: "Σ", prod: "Π", infty: "∞", to: "→", rightarrow: "→",
    odot: "⊙", otimes: "⊗", ldots: "…", dots: "…", cdots: "⋯", log: "log", exp: "exp",
    max: "max", min: "min", alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε",
    varepsilon: "ε", eta: "η", theta: "θ", lambda: "λ", mu: "μ", pi: "π", sigma: "σ",
    tau: "τ", phi: "φ", omega: "ω", Sigma: "Σ", Delta: "Δ", partial: "∂", nabla: "∇",
    mathbb: "", quad: " ", qquad: " ", left: "", right: "", sqrt: "√"};
  function plain(tex) {
    var s = tex, prev;
    do {  // innermost first
      prev = s;
      s = s.replace(/\\sqrt\{([^{}]*)\}/g, "√$1")
           .replace(/\\frac\{([^{}]*)\}\{([^{}]*)\}/g, "($1)/($2)")
           .replace(/\\(?:mathbf|mathrm|text|textrm|textbf|mathit|operatorname|boldsymbol|mathcal|mathbb|bm|hat|tilde|bar|vec)\{([^{}]*)\}/g, "$1")
           .replace(/([_^])\{([^{}]*)\}/g, "$1$2");
    } while (s !== prev);
    s = s.replace(/\^\{?\\top\}?/g, "ᵀ").replace(/\\([A-Za-z]+)/g, function (m, name) {
      return SYMBOLS.hasOwnProperty(name) ? SYMBOLS[name] : name;
    });
    return s.replace(/\\[,;:! ]/g, " ").replace(/[{}]/g, "").replace(/\s+/g, " ").trim();
  }
  function strip(text) {
    return text.replace(/\\\(([\s\S]+?)\\\)|\\\[([\s\S]+?)\\\]|\$\$([\s\S]+?)\$\$/g, function (m, a, b, c) {
      return plain(a || b || c);
    });
  }
  function patch() {
    if (typeof Search === "undefined" || !Search.htmlToText || Search.d2lPlain) return;
    var original = Search.htmlToText;
    Search.htmlToText = function (html, anchor) { return strip(original(html, anchor)); };
    Search.d2lPlain = true;
  }
  window.d2lPlainTeX = strip;
  patch();
  document.addEventListener("DOMContentLoaded", patch);
})();

/* Wide tables on a phone: a table of four or more columns reads as one card per row
   (each value under its column's name; CSS in d2lbook.css), so no column is cut off
   and no word is broken letter by letter. */
(function () {
  function label() {
    document.querySelectorAll(".bd-article table").forEach(function (t) {
      var head = t.querySelectorAll("thead th");
      if (head.length < 4) return;
      var names = Array.prototype.map.call(head, function (th) { return th.textContent.trim(); });
      t.classList.add("d2l-cards");
      t.querySelectorAll("tbody tr").forEach(function (tr) {
        Array.prototype.forEach.call(tr.children, function (td, i) {
          if (names[i]) td.setAttribute("data-label", names[i]);
        });
      });
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", label);
  else label();
})();
