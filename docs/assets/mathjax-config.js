// MathJax 3 configuration for the whole site, loaded before the vendored tex-svg-full.js.
// Markdown pages wrap math in <span/div class="arithmatex"> (pymdownx.arithmatex, generic
// mode); executed chapters keep raw $...$ inside jp-RenderedMarkdown blocks. Everything
// else is skipped (ignoreHtmlClass ".+"), so code, tables of numbers and navigation are
// never mistaken for TeX.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"], ["$", "$"]],
    displayMath: [["\\[", "\\]"], ["$$", "$$"]],
    processEscapes: true,
    processEnvironments: true,
    tags: "none",
  },
  options: {
    ignoreHtmlClass: ".+",
    processHtmlClass: "arithmatex|jp-RenderedMarkdown|jp-MarkdownOutput|jp-RenderedHTMLCommon|book-figure|exercise-answer|claims-summary",
  },
  svg: { fontCache: "global" },
};
