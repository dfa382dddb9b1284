// A chapter's figure opens at its full drawn size when tapped or clicked (Enter or Space from the
// keyboard): on a phone the column shrinks a figure until its legend is unreadable. The overlay
// scrolls when the figure is wider than the screen; a click, a tap or Escape closes it. No
// library and no network: the page keeps working from disk.
(function () {
  "use strict";
  var overlay = null, opener = null;

  function close() {
    if (!overlay) { return; }
    overlay.remove();
    overlay = null;
    document.documentElement.classList.remove("book-lightbox-open");
    if (opener) { opener.focus(); opener = null; }
  }

  function open(img) {
    close();
    opener = img;
    overlay = document.createElement("div");
    overlay.className = "book-lightbox";
    overlay.setAttribute("role", "dialog");
    overlay.setAttribute("aria-modal", "true");
    overlay.setAttribute("aria-label", "The figure at full size (click or press Escape to close)");
    overlay.tabIndex = -1;
    var big = document.createElement("img");
    big.src = img.src;
    big.alt = img.alt;
    // The figure's drawn width (its width attribute), never less than the screen's.
    var drawn = Number(img.getAttribute("width")) || img.naturalWidth;
    big.style.width = Math.max(drawn, Math.min(window.innerWidth - 32, 2 * drawn)) + "px";
    overlay.appendChild(big);
    overlay.addEventListener("click", close);
    document.body.appendChild(overlay);
    document.documentElement.classList.add("book-lightbox-open");
    overlay.focus();
  }

  function arm(img) {
    if (img.dataset.lightbox) { return; }
    img.dataset.lightbox = "armed";
    img.tabIndex = 0;
    img.setAttribute("role", "button");
    img.title = "Open the figure at full size";
    img.addEventListener("click", function () { open(img); });
    img.addEventListener("keydown", function (event) {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); open(img); }
    });
  }

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape") { close(); }
  });
  function armAll() { document.querySelectorAll("figure.book-figure img").forEach(arm); }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", armAll);
  } else {
    armAll();
  }
})();
