/* The lab: four interactive views drawn from the payload that the build inlines into the page
   (<script type="application/json" id="lab-data">, written by mlm_book.lab.viz_payload).

   Every number shown comes from the payload; this script only lays things out (bar lengths,
   point positions, sorting the bars) and follows the reader's choices. Vanilla JavaScript and
   SVG, no library, so the page works from disk with no network. Each view is drawn at the
   width of its box and redrawn when the window is resized. */
(function () {
  "use strict";

  var source = document.getElementById("lab-data");
  if (!source) { return; }
  var D = JSON.parse(source.textContent);
  var SVG_NS = "http://www.w3.org/2000/svg";
  var P = D.palette;
  var SENSE = D.sense_colors;
  var NAMES = D.tokens;
  // One colour per family across the views: Theorem 2's optimum, the trained encoder, the HMM's own conditionals.
  var COLOR = { optimum: P.green, encoder: P.vermillion, hmm: P.grey };
  var SENSE_NAMES = ["a", "b"];

  // ------------------------------------------------------------------ small helpers
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    setAll(node, attrs);
    append(node, children);
    return node;
  }
  function svg(tag, attrs, children) {
    var node = document.createElementNS(SVG_NS, tag);
    setAll(node, attrs);
    append(node, children);
    return node;
  }
  function setAll(node, attrs) {
    if (!attrs) { return; }
    Object.keys(attrs).forEach(function (key) {
      var value = attrs[key];
      if (value === null || value === undefined || value === false) { return; }
      if (key === "text") { node.textContent = value; } else { node.setAttribute(key, value === true ? "" : value); }
    });
  }
  function append(node, children) {
    if (children === undefined || children === null) { return; }
    (Array.isArray(children) ? children : [children]).forEach(function (child) {
      if (child === null || child === undefined) { return; }
      if (Array.isArray(child)) { append(node, child); return; }
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
  }
  function clear(node) { while (node.firstChild) { node.removeChild(node.firstChild); } }
  function fixed(x, digits) { return x.toFixed(digits === undefined ? 3 : digits); }
  /* A gap delta: three decimals, or three significant digits in scientific notation when smaller than 0.001. */
  function delta(x) {
    if (x === 0) { return "0"; }
    return Math.abs(x) < 1e-3 ? x.toExponential(2) : x.toFixed(3);
  }
  function value(name, x, text) {
    return el("span", { "class": "lab-value", "data-lab": name, "data-value": String(x), text: text });
  }
  function radio(group, val, checked, label, extra) {
    var input = el("input", { type: "radio", name: group, value: String(val), checked: checked });
    return el("label", extra || { "class": "lab-option" }, [input, label]);
  }
  function widthOf(node, fallback) {
    var w = node.clientWidth;
    return w > 0 ? w : fallback;
  }

  var redraws = [];
  var pending = false;
  window.addEventListener("resize", function () {
    if (pending) { return; }
    pending = true;
    window.requestAnimationFrame(function () { pending = false; redraws.forEach(function (f) { f(); }); });
  });

  // ------------------------------------------------------------------ Figure A: HMM view
  function hmmView(root) {
    var H = D.hmm;
    var n = H.tokens.length;
    var state = { position: H.default.position, display: H.default.display, all: false };
    var senseAt = {};
    H.w_positions.forEach(function (p, k) { senseAt[p] = k; });

    var chips = H.tokens.map(function (t, i) {
      var cls = "lab-chip" + (i in senseAt ? " lab-chip--w lab-sense-" + SENSE_NAMES[H.w_senses[senseAt[i]]] : "");
      var style = i in senseAt ? "--lab-sense:" + SENSE[H.w_senses[senseAt[i]]] : null;
      return radio("lab-position", i, i === state.position,
                   [el("span", { "class": "lab-chip-pos", text: String(i + 1) }),
                    el("span", { "class": "lab-chip-token", text: NAMES[t] })],
                   { "class": cls, style: style, title: "position " + (i + 1) + ": " + NAMES[t] });
    });
    var sentence = el("fieldset", { "class": "lab-sentence" },
                      [el("legend", { text: "Position: pick a token of the sentence" })].concat(chips));
    var senseKey = el("p", { "class": "lab-legend" }, ["w outlined: ",
      el("span", { "class": "lab-swatch", style: "background:" + SENSE[0] }), " drawn in sense a, ",
      el("span", { "class": "lab-swatch", style: "background:" + SENSE[1] }), " drawn in sense b"]);
    var displayLabels = {};
    var displays = el("fieldset", { "class": "lab-displays" }, [el("legend", { "data-lab": "display-legend" })]);
    H.displays.forEach(function (d) {
      var span = el("span");
      displayLabels[d] = span;
      displays.appendChild(radio("lab-display", d, d === state.display, span));
    });
    var reads = el("p", { "class": "lab-reads" });
    var readout = el("dl", { "class": "lab-readout" });
    var bars = el("div", { "class": "lab-plot" });
    var allBox = el("input", { type: "checkbox", id: "lab-all-tokens" });
    var all = el("label", { "class": "lab-option", "for": "lab-all-tokens" }, [allBox, "show all 25 tokens"]);
    var legend = el("p", { "class": "lab-legend" }, [
      el("span", { "class": "lab-swatch", style: "background:" + COLOR.optimum }), " exact posterior (Theorem 2's optimum) ",
      el("span", { "class": "lab-swatch", style: "background:" + COLOR.encoder }), " trained encoder"]);
    var c = H.caption;
    var caption = el("p", { "class": "lab-caption" }, [
      "The other positions show their own tokens. Over the " + c.n_positions + " selected positions of " +
      c.n_sequences + " held-out sentences (Chapter 2), the encoder's mean KL to the exact posterior is ",
      value("caption-kl", c.mean_kl, fixed(c.mean_kl)), " nats against a mean entropy of ",
      value("caption-entropy", c.mean_entropy, fixed(c.mean_entropy)), " nats. In training, a position is " +
      "selected with probability " + H.channel.rho + " and then shows [MASK] with probability " + H.channel.mask +
      ", a random token with probability " + H.channel.random + " (one in ten) and itself otherwise."]);
    append(root, [sentence, senseKey, displays, reads, readout, legend, bars, all, caption]);

    function view() { return H.views[state.position][state.display]; }

    function update() {
      var i = state.position, t = H.tokens[i], v = view();
      displays.querySelector("legend").textContent = "What position " + (i + 1) + " shows";
      displayLabels.mask.textContent = "[MASK]";
      displayLabels.self.textContent = "the token itself (" + NAMES[t] + ")";
      displayLabels.random.textContent = "a random substitute (" + NAMES[H.substitutes[i]] + ")";
      clear(reads);
      append(reads, ["The encoder reads: "].concat(H.tokens.map(function (token, k) {
        var shown = k === i ? v.shown : token;
        return el("span", { "class": "lab-read" + (k === i ? " lab-read--here" : ""), text: NAMES[shown] });
      })));
      clear(readout);
      var rows = [
        ["KL(exact ‖ encoder)", [value("kl", v.kl, fixed(v.kl)), " nats"]],
        ["P(true token " + NAMES[t] + "), exact", value("p-true-exact", v.p_true_exact, fixed(v.p_true_exact))],
        ["P(true token " + NAMES[t] + "), encoder", value("p-true-encoder", v.p_true_encoder, fixed(v.p_true_encoder))]
      ];
      if (i in senseAt) {
        var k = senseAt[i], pa = H.sense_posterior[k][0];
        rows.push(["P(sense a | sentence)", [value("sense-a", pa, fixed(pa)),
                   " (this w was drawn in sense " + SENSE_NAMES[H.w_senses[k]] + ")"]]);
      } else {
        var other = H.w_positions.map(function (p, k) {
          return "position " + (p + 1) + ": " + fixed(H.sense_posterior[k][0]);
        }).join("; ");
        rows.push(["P(sense a | sentence) at the two w", el("span", { "data-lab": "sense-a", text: other })]);
      }
      rows.forEach(function (row) { append(readout, [el("dt", { text: row[0] }), el("dd", null, row[1])]); });
      drawBars();
    }

    function drawBars() {
      var v = view(), t = H.tokens[state.position];
      var order = v.exact.map(function (_, y) { return y; });
      order.sort(function (a, b) { return v.exact[b] - v.exact[a] || a - b; });
      var rows = state.all ? order : order.slice(0, 8);
      if (rows.indexOf(t) < 0) { rows.push(t); }
      var width = Math.min(widthOf(bars, 600), 640);
      var label = 58, right = 46, rowH = 30, top = 22;
      var span = Math.max(width - label - right, 60);
      var height = top + rows.length * rowH + 4;
      var g = svg("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "img",
                           "aria-label": "Bars of the exact posterior and of the encoder's prediction at position " +
                           (state.position + 1) + " for the " + rows.length + " tokens the exact posterior ranks " +
                           "highest" + (state.all ? "" : ", and the true token") });
      [0, 0.25, 0.5, 0.75, 1].forEach(function (x) {
        var X = label + x * span;
        g.appendChild(svg("line", { x1: X, x2: X, y1: top - 4, y2: height - 2, "class": "lab-grid" }));
        g.appendChild(svg("text", { x: X, y: top - 8, "text-anchor": "middle", "class": "lab-tick", text: String(x) }));
      });
      rows.forEach(function (y, r) {
        var Y = top + r * rowH;
        var name = NAMES[y] + (y === t ? " ✓" : "");
        g.appendChild(svg("text", { x: label - 6, y: Y + rowH / 2 + 4, "text-anchor": "end",
                                    "class": "lab-label" + (y === t ? " lab-label--true" : ""), text: name }));
        [["optimum", v.exact[y]], ["encoder", v.encoder[y]]].forEach(function (pair, k) {
          var w = Math.max(pair[1] * span, pair[1] > 0 ? 0.5 : 0);
          var by = Y + 3 + k * 12;
          g.appendChild(svg("rect", { x: label, y: by, width: w, height: 11, fill: COLOR[pair[0]] }));
          g.appendChild(svg("text", { x: label + w + 4, y: by + 9.5, "class": "lab-bar-value",
                                      text: fixed(pair[1]) }));
        });
      });
      clear(bars);
      bars.appendChild(g);
    }

    sentence.addEventListener("change", function (e) { state.position = Number(e.target.value); update(); });
    displays.addEventListener("change", function (e) { state.display = e.target.value; update(); });
    allBox.addEventListener("change", function () { state.all = allBox.checked; drawBars(); });
    redraws.push(drawBars);
    update();
  }

  // ------------------------------------------------------------------ Figure C: four-cycle view
  function cycleView(root) {
    var C = D.cycles;
    var fam = {};
    C.families.forEach(function (f) { fam[f.key] = f; });
    var colors = { exact: COLOR.hmm, encoder: COLOR.encoder, population: COLOR.optimum };
    var state = { cycle: C.default };

    var select = el("select", { id: "lab-cycle" });
    for (var k = 0; k < C.count; k++) {
      select.appendChild(el("option", { value: String(k), text: "cycle " + (k + 1) + " (encoder |δ| " +
                                        delta(Math.abs(fam.encoder.delta[k])) + ")" }));
    }
    select.value = String(state.cycle);
    var prev = el("button", { type: "button", "class": "lab-button", text: "◀ previous" });
    var next = el("button", { type: "button", "class": "lab-button", text: "next ▶" });
    var controls = el("div", { "class": "lab-controls" },
                      [el("label", { "for": "lab-cycle", text: "Cycle " }), select, prev, next]);
    var context = el("p", { "class": "lab-reads" });
    var values = el("p", { "class": "lab-cycle-values" });
    var tableBox = el("div", { "class": "lab-table-box" });
    var strip = el("div", { "class": "lab-plot" });
    var caption = el("p", { "class": "lab-caption", text:
      "Every dot is one of the " + C.count + " cycles of Chapter 3, on a log scale; the ringed dot is the cycle " +
      "chosen above, the bar each family's median |δ|. Exact zeros are drawn at the left edge. The population optimum is Theorem 2's under BERT's channel at ρ = " +
      C.rho + "." });
    append(root, [controls, context, values, tableBox, strip, caption]);

    function update() {
      var c = state.cycle, i = C.first[c], j = C.second[c];
      select.value = String(c);
      clear(context);
      append(context, ["Sentence: "].concat(C.tokens[c].map(function (token, p) {
        var here = p === i || p === j;
        return el("span", { "class": "lab-read" + (here ? " lab-read--here" : ""),
                            text: here ? "[" + NAMES[token] + "]" : NAMES[token] });
      })));
      clear(values);
      append(values, ["Positions i = " + (i + 1) + " and j = " + (j + 1) + ". At i the cycle takes a = ",
        el("b", { text: NAMES[C.a[c]] }), " and a′ = ", el("b", { text: NAMES[C.a_alt[c]] }),
        "; at j, b = ", el("b", { text: NAMES[C.b[c]] }), " and b′ = ", el("b", { text: NAMES[C.b_alt[c]] }),
        " (the two likeliest values at each under the HMM)."]);
      // [sign, position, value, other position's value, alternative value] of each log-odds term
      var terms = [["+", "i", "a", "b", "a′"], ["+", "j", "b", "a′", "b′"], ["−", "j", "b", "a", "b′"],
                   ["−", "i", "a", "b′", "a′"]];
      function q(pos, val, given) { return ["q", el("sub", { text: pos }), "(" + val + " | " + given + ")"]; }
      var head = el("tr", null, [el("th", { text: "log-odds" })].concat(C.families.map(function (f) {
        return el("th", { title: f.name }, [el("span", { "class": "lab-swatch", style: "background:" + colors[f.key] }),
                                            " " + f.short]);
      })));
      var body = terms.map(function (t, r) {
        var term = el("td", null, [t[0] + " log "].concat(q(t[1], t[2], t[3]), [" / "], q(t[1], t[4], t[3])));
        return el("tr", null, [term].concat(C.families.map(function (f) {
          var x = f.log_odds[c][r];
          return el("td", null, value("odds-" + f.key + "-" + r, x, fixed(x)));
        })));
      });
      body.push(el("tr", { "class": "lab-total" }, [el("td", { text: "δ" })].concat(C.families.map(function (f) {
        return el("td", null, value("delta-" + f.key, f.delta[c], delta(f.delta[c])));
      }))));
      clear(tableBox);
      tableBox.appendChild(el("table", { "class": "lab-table" }, [el("thead", null, head), el("tbody", null, body)]));
      drawStrip();
    }

    function drawStrip() {
      var width = Math.min(widthOf(strip, 600), 720);
      var left = 8, right = 14, rowH = 58, top = 8, axis = 34;
      var lo = Math.round(Math.log10(C.floor));
      var hi = Math.ceil(Math.max.apply(null, C.families.map(function (f) { return Math.log10(f.max_abs); })));
      var height = top + C.families.length * rowH + axis;
      var span = width - left - right;
      function X(d) { return left + (Math.log10(Math.max(Math.abs(d), C.floor)) - lo) / (hi - lo) * span; }
      var g = svg("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "img",
                           "aria-label": "Strip plot of the absolute four-cycle gap of every cycle, one row per family, " +
                           "on a log scale from 10^" + lo + " to 10^" + hi });
      var step = span < 420 ? 4 : 2;
      for (var e = Math.floor(hi / step) * step; e > lo; e -= step) {
        g.appendChild(svg("line", { x1: X(Math.pow(10, e)), x2: X(Math.pow(10, e)), y1: top, y2: height - axis + 4,
                                    "class": "lab-grid" }));
        g.appendChild(svg("text", { x: X(Math.pow(10, e)), y: height - axis + 18, "text-anchor": "middle",
                                    "class": "lab-tick" }, ["10", svg("tspan", { dy: -5, "font-size": "8px",
                                    text: String(e).replace("-", "−") })]));
      }
      g.appendChild(svg("text", { x: left + span / 2, y: height - 4, "text-anchor": "middle", "class": "lab-tick",
                                  text: "|δ| in nats (log scale)" }));
      C.families.forEach(function (f, r) {
        var Y = top + r * rowH;
        g.appendChild(svg("text", { x: left, y: Y + 11, "class": "lab-label", text: f.name + ": median " +
                                    delta(f.median_abs) }));
        f.delta.forEach(function (d, k) {
          var jitter = ((k * 37) % 23) / 22 - 0.5;  // a fixed spread so that dots do not hide one another
          g.appendChild(svg("circle", { cx: X(d), cy: Y + 34 + jitter * 22, r: 2.6, fill: colors[f.key],
                                        "fill-opacity": 0.55 }));
        });
        var m = X(f.median_abs);
        g.appendChild(svg("line", { x1: m, x2: m, y1: Y + 18, y2: Y + 50, stroke: P.black, "stroke-width": 2 }));
        var s = f.delta[state.cycle];
        g.appendChild(svg("circle", { cx: X(s), cy: Y + 34 + (((state.cycle * 37) % 23) / 22 - 0.5) * 22, r: 6,
                                      fill: "none", stroke: P.black, "stroke-width": 2, "data-lab": "ring-" + f.key }));
      });
      clear(strip);
      strip.appendChild(g);
    }

    select.addEventListener("change", function () { state.cycle = Number(select.value); update(); });
    prev.addEventListener("click", function () { state.cycle = (state.cycle + C.count - 1) % C.count; update(); });
    next.addEventListener("click", function () { state.cycle = (state.cycle + 1) % C.count; update(); });
    redraws.push(drawStrip);
    update();
  }

  // ------------------------------------------------------------------ Figure B: filing view
  /* A probability: three decimals, or two significant digits in scientific notation below 0.001 (the payload
     holds four significant digits). */
  function prob(x) {
    if (x === 0) { return "0"; }
    return x < 1e-3 ? x.toExponential(1) : x.toFixed(3);
  }
  var TYPE_WORDS = { ORG: "the company", PRODUCT: "the product" };

  function filingView(root) {
    var F = D.filings;
    var E = D.entity_colors;
    var state = { window: F.default.window, position: F.default.position };

    var windows = el("fieldset", { "class": "lab-displays" }, [el("legend", { text: "Window" })]);
    F.windows.forEach(function (w, k) {
      windows.appendChild(radio("lab-filing-window", k, k === state.window, w.title));
    });
    var sentence = el("fieldset", { "class": "lab-sentence" });
    var key = el("p", { "class": "lab-legend" }, ["Mentions outlined by the corpus's gold type: ",
      el("span", { "class": "lab-swatch", style: "background:" + E.ORG }), " a company, ",
      el("span", { "class": "lab-swatch", style: "background:" + E.PRODUCT }), " a product. The window is centred on the word with the bar above it; [PAD] slots lie beyond the filing's edges " +
      "and are not read."]);
    var about = el("p", { "class": "lab-reads", "aria-live": "polite" });
    var readout = el("dl", { "class": "lab-readout" });
    var legend = el("p", { "class": "lab-legend" }, [
      el("span", { "class": "lab-swatch", style: "background:" + COLOR.encoder }),
      " the filing encoder's " + F.top + " best guesses with the chosen word shown as [MASK] (✓ the filing's word, " +
      "added as a last bar when it is not among them)"]);
    var bars = el("div", { "class": "lab-plot" });
    var c = F.caption, ch = F.channel;
    function band(k) { return fixed(c.spread[k][0]) + " ± " + fixed(c.spread[k][1]); }
    var caption = el("p", { "class": "lab-caption" }, [
      "Chapter 6 makes the same check on " + c.n_words + " words of the held-out filings, each at the centre of its " +
      "own window: on average the masked guess puts ",
      value("filing-caption-guess", c.guess, fixed(c.guess)), " on the word, Theorem 2's plug-in is ",
      value("filing-caption-plugin", c.plugin, fixed(c.plugin)), ", and the encoder keeps ",
      value("filing-caption-visible", c.visible, fixed(c.visible)), " on the visible word (the book's training " +
      "seed; over the " + c.seeds + " seeds the plug-in is " + band("plugin") + " and the kept share " +
      band("visible") + "). The encoder was trained through BERT's channel over its " + F.vocab_size +
      " words: a position is selected with probability " + ch.rho + ", and then shows [MASK] with probability " +
      ch.mask + ", a random word with probability " + ch.random + " and itself with probability " +
      fixed(ch.keep, 1) + "."]);
    append(root, [windows, sentence, key, about, readout, legend, bars, caption]);

    function current() { return F.windows[state.window].slots[state.position]; }

    function drawSentence() {
      var W = F.windows[state.window];
      clear(sentence);
      sentence.appendChild(el("legend", { text: "Word: pick one to mask" }));
      var pads = 0, seen = false;
      function flush() {
        if (!pads) { return; }
        sentence.appendChild(el("span", { "class": "lab-pad", text: pads + " × [PAD] (" +
                                          (seen ? "after the filing's end" : "before the filing's start") + ")" }));
        pads = 0;
      }
      W.slots.forEach(function (s, i) {
        if (s === null) { pads += 1; return; }
        flush();
        seen = true;
        var typed = s.entity !== "-";
        var cls = "lab-chip" + (typed ? " lab-chip--w" : "") + (i === F.centre ? " lab-chip--centre" : "");
        var title = "position " + (i + 1) + ": " + s.word + (s.text ? " (the filing's word " + s.text +
                    " is not in the vocabulary)" : "") + (typed ? ", " + TYPE_WORDS[s.entity] : "") +
                    (i === F.centre ? ", the window's centre" : "");
        sentence.appendChild(radio("lab-filing-position", i, i === state.position,
          [el("span", { "class": "lab-chip-pos", text: String(i + 1) }),
           el("span", { "class": "lab-chip-token", text: s.word })],
          { "class": cls, style: typed ? "--lab-sense:" + E[s.entity] : null, title: title }));
      });
      flush();
    }

    function update() {
      var s = current();
      clear(about);
      append(about, ["Position " + (state.position + 1) + ": ", el("b", { text: s.word }),
        s.text ? " (the filing's word " + s.text + ", outside the vocabulary)" : "",
        s.entity !== "-" ? " (" + TYPE_WORDS[s.entity] + ")" : "",
        ", which occurs " + s.count.toLocaleString("en") + " times in the filings."]);
      clear(readout);
      var rows = [
        ["[MASK] guess's probability of " + s.word, value("filing-guess", s.guess, prob(s.guess))],
        ["kept on the visible word", value("filing-visible", s.visible, prob(s.visible))],
        ["Theorem 2's plug-in", value("filing-plugin", s.plugin, prob(s.plugin))]
      ];
      rows.forEach(function (row) { append(readout, [el("dt", { text: row[0] }), el("dd", null, row[1])]); });
      drawBars();
    }

    function drawBars() {
      var s = current();
      var rows = s.top.map(function (pair) { return { word: pair[0], p: pair[1] }; });
      var has = rows.some(function (r) { return r.word === s.word; });
      if (!has) { rows.push({ word: s.word, p: s.guess }); }
      var width = Math.min(widthOf(bars, 600), 640);
      var label = width < 420 ? 96 : 120, right = 62, rowH = 24, top = 22;
      var span = Math.max(width - label - right, 60);
      var height = top + rows.length * rowH + 4;
      var g = svg("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "img",
                           "aria-label": "Bars of the filing encoder's " + F.top + " best guesses at position " +
                           (state.position + 1) + " shown as [MASK]" + (has ? "" : ", and the filing's word") });
      [0, 0.25, 0.5, 0.75, 1].forEach(function (x) {
        var X = label + x * span;
        g.appendChild(svg("line", { x1: X, x2: X, y1: top - 4, y2: height - 2, "class": "lab-grid" }));
        g.appendChild(svg("text", { x: X, y: top - 8, "text-anchor": "middle", "class": "lab-tick", text: String(x) }));
      });
      rows.forEach(function (r, k) {
        var Y = top + k * rowH, mine = r.word === s.word;
        g.appendChild(svg("text", { x: label - 6, y: Y + rowH / 2 + 4, "text-anchor": "end",
                                    "class": "lab-label" + (mine ? " lab-label--true" : ""),
                                    text: r.word + (mine ? " ✓" : "") }));
        var w = Math.max(r.p * span, r.p > 0 ? 0.5 : 0);
        g.appendChild(svg("rect", { x: label, y: Y + 5, width: w, height: rowH - 10, fill: COLOR.encoder }));
        g.appendChild(svg("text", { x: label + w + 4, y: Y + rowH / 2 + 4, "class": "lab-bar-value", text: prob(r.p) }));
      });
      clear(bars);
      bars.appendChild(g);
    }

    windows.addEventListener("change", function (e) {
      state.window = Number(e.target.value);
      state.position = F.centre;
      drawSentence();
      update();
    });
    sentence.addEventListener("change", function (e) { state.position = Number(e.target.value); update(); });
    redraws.push(drawBars);
    drawSentence();
    update();
  }

  // ------------------------------------------------------------------ Figure D: clouds
  function cloudView(root) {
    var SETS = { w: D.clouds, kestrel: D.kestrel };
    var K = D.kestrel, E = D.entity_colors;
    var state = { word: "w", layer: D.clouds.default };
    var words = el("fieldset", { "class": "lab-displays" }, [el("legend", { text: "Word" }),
      radio("lab-word", "w", true, "w (the HMM, Chapters 4 and 5)"),
      radio("lab-word", "kestrel", false, "kestrel (the filings, Chapter 6)")]);
    var layers = el("fieldset", { "class": "lab-displays" });
    var wrap = el("div", { "class": "lab-cloud" });
    var plot = el("div", { "class": "lab-plot lab-cloud-plot" });
    var side = el("div", { "class": "lab-cloud-side" });
    append(wrap, [plot, side]);
    var legend = el("p", { "class": "lab-legend" });
    var caption = el("p", { "class": "lab-caption" });
    append(root, [words, layers, wrap, legend, caption]);

    function drawLayers() {
      var B = SETS[state.word];
      clear(layers);
      layers.appendChild(el("legend", { text: "Layer" }));
      B.layers.forEach(function (L) {
        layers.appendChild(radio("lab-layer", L.layer, L.layer === state.layer, L.vector));
      });
      clear(legend);
      clear(caption);
      if (state.word === "w") {
        append(legend, [
          el("span", { "class": "lab-dot", style: "background:" + SENSE[0] }), " sense a ",
          el("span", { "class": "lab-dot", style: "background:" + SENSE[1] }), " sense b (the sense each occurrence " +
          "was drawn in); a faint dot is an occurrence whose sense the sentence leaves uncertain (exact posterior " +
          "near one half)."]);
        caption.textContent = B.n_shown.toLocaleString("en") + " of the " + B.n_occurrences.toLocaleString("en") +
          " test occurrences of w are drawn (a seeded random subset, the same at every layer); every measure beside " +
          "the cloud uses all of them.";
      } else {
        append(legend, [
          el("span", { "class": "lab-dot", style: "background:" + E.ORG }), " the company (" + K.counts[0] + ") ",
          el("span", { "class": "lab-swatch", style: "background:" + E.PRODUCT }), " the product (" + K.counts[1] +
          "), products to the right. The colour is each mention's gold type from the corpus, not a posterior: " +
          "no dot is shaded, because the type is known. Mentions whose windows read alike land on almost the " +
          "same point, so a dark clump stands for many of them."]);
        caption.textContent = "All " + K.n_occurrences + " typed mentions of kestrel in the filings, each read at " +
          "the centre of its own window as Chapter 6 reads them. Beside the cloud: Chapter 6's numbers for the " +
          "book's training seed, and their mean ± sd over the " + K.seeds + " training seeds; the majority shares " +
          "are what one vector per word can reach at best.";
      }
    }

    function row(label, name, x, spread) {
      var cells = [el("th", { scope: "row", text: label }), el("td", null, value(name, x, fixed(x)))];
      if (state.word === "kestrel") {
        var text = spread ? fixed(spread[0]) + " ± " + fixed(spread[1]) : "—";
        cells.push(el("td", null, el("span", { "class": "lab-spread", "data-lab": name + "-spread",
                                               "data-value": spread ? String(spread[0]) : "", text: text })));
      }
      return el("tr", null, cells);
    }

    function update() {
      var B = SETS[state.word], L = B.layers[state.layer];
      clear(side);
      var rows, head = null, title;
      if (state.word === "w") {
        title = "Layer " + L.layer + ": Chapter 4's measures, Chapter 5's probe";
        rows = [
          row("self-similarity", "self-similarity", L.self_similarity),
          row("anisotropy baseline", "baseline", L.baseline),
          row("adjusted self-similarity", "adjusted", L.adjusted),
          row("MEV", "mev", L.mev),
          row("MEV of random tokens", "token-mev", L.token_mev),
          row("sense probe accuracy", "probe", L.probe),
          row("shuffled-label leak check", "control", L.control),
          row("static cap", "cap", B.cap),
          row("exact Bayes accuracy", "bayes", B.bayes)
        ];
      } else {
        var S = L.spread;
        title = "Layer " + L.layer + ": Chapter 6's measures and probes";
        head = el("thead", null, el("tr", null, [el("td"), el("th", { scope: "col", text: "book seed" }),
                                                 el("th", { scope: "col", text: K.seeds + " seeds" })]));
        rows = [
          row("self-similarity", "self-similarity", L.self_similarity, S.self_similarity),
          row("anisotropy baseline", "baseline", L.baseline, S.baseline),
          row("adjusted self-similarity", "adjusted", L.adjusted, S.adjusted),
          row("MEV", "mev", L.mev, S.mev),
          row("MEV of random tokens", "token-mev", L.token_mev, S.token_mev),
          row("company or product: probe on kestrel (5 folds)", "kestrel-probe", L.probe, S.probe),
          row("majority share on kestrel", "majority", K.majority),
          row("typing across the aliases (one held out)", "typing", L.typing, S.typing),
          row("per-alias majority", "alias-majority", K.alias_majority)
        ];
      }
      side.appendChild(el("table", { "class": "lab-table lab-measures" },
                          [el("caption", { text: title }), head, el("tbody", null, rows)]));
      drawCloud();
    }

    function drawCloud() {
      var B = SETS[state.word], L = B.layers[state.layer];
      var kestrel = state.word === "kestrel";
      var width = Math.min(widthOf(plot, 360), 420);
      var height = Math.round(width * 0.85);
      var pad = 34;
      var inner = { x: pad, y: 10, w: width - pad - 10, h: height - pad - 10 };
      var g = svg("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "img",
                           "aria-label": kestrel ? (L.single_point ? "One point: at layer 0 all " + B.n_occurrences +
                             " mentions of kestrel are the same vector" : "The " + B.n_occurrences + " mentions of " +
                             "kestrel at layer " + L.layer + " on their own two principal axes, coloured by type")
                           : "The test occurrences of w at layer " + L.layer + " on their own two principal " +
                             "axes, coloured by sense and shaded by the exact sense posterior" });
      g.appendChild(svg("rect", { x: inner.x, y: inner.y, width: inner.w, height: inner.h, "class": "lab-frame" }));
      var cx = inner.x + inner.w / 2, cy = inner.y + inner.h / 2;
      if (kestrel && L.single_point) {
        g.appendChild(svg("circle", { cx: cx, cy: cy, r: 6, fill: P.black, "class": "lab-point" }));
        g.appendChild(svg("text", { x: cx, y: cy - 26, "text-anchor": "middle", "class": "lab-label",
                                    "data-lab": "single-point", text: "one point: layer 0 is static" }));
        g.appendChild(svg("text", { x: cx, y: cy + 28, "text-anchor": "middle", "class": "lab-tick",
                                    text: "all " + B.n_occurrences + " mentions are E[kestrel] + P16" }));
        g.appendChild(svg("text", { x: cx, y: height - 12, "text-anchor": "middle", "class": "lab-tick",
                                    text: "no principal axes: nothing varies" }));
      } else {
        var xs = L.x, ys = L.y;
        var xmin = Math.min.apply(null, xs), xmax = Math.max.apply(null, xs);
        var ymin = Math.min.apply(null, ys), ymax = Math.max.apply(null, ys);
        var xr = (xmax - xmin) || 1, yr = (ymax - ymin) || 1;
        var m = 6;  // keep the markers inside the frame
        var X = function (x) { return inner.x + m + (x - xmin) / xr * (inner.w - 2 * m); };
        var Y = function (y) { return inner.y + inner.h - m - (y - ymin) / yr * (inner.h - 2 * m); };
        for (var k = 0; k < xs.length; k++) {
          var px = X(xs[k]), py = Y(ys[k]);
          if (kestrel) {
            var type = B.types[k];
            if (type === 0) {
              g.appendChild(svg("circle", { cx: px.toFixed(1), cy: py.toFixed(1), r: 3.5, fill: E.ORG,
                                            "fill-opacity": 0.55, "class": "lab-point" }));
            } else {
              g.appendChild(svg("rect", { x: (px - 3.2).toFixed(1), y: (py - 3.2).toFixed(1), width: 6.4, height: 6.4,
                                          fill: E.PRODUCT, "fill-opacity": 0.55, "class": "lab-point" }));
            }
          } else {
            var p = B.posterior_b[k];
            var sure = Math.abs(2 * p - 1);  // 0 when the sentence leaves the sense at one half, 1 when certain
            g.appendChild(svg("circle", { cx: px.toFixed(1), cy: py.toFixed(1), r: state.layer === 0 ? 4 : 2,
                                          fill: SENSE[B.senses[k]], "fill-opacity": (0.06 + 0.7 * sure).toFixed(2) }));
          }
        }
        g.appendChild(svg("text", { x: cx, y: height - 12, "text-anchor": "middle",
                                    "class": "lab-tick", text: "PC 1 (" + Math.round(100 * L.explained[0]) +
                                    "% of centred variance)" }));
        g.appendChild(svg("text", { x: 14, y: cy, "text-anchor": "middle", "class": "lab-tick",
                                    transform: "rotate(-90 14 " + cy + ")",
                                    text: "PC 2 (" + Math.round(100 * L.explained[1]) + "%)" }));
      }
      clear(plot);
      plot.appendChild(g);
    }

    words.addEventListener("change", function (e) {
      state.word = e.target.value;
      drawLayers();
      update();
    });
    layers.addEventListener("change", function (e) { state.layer = Number(e.target.value); update(); });
    redraws.push(drawCloud);
    drawLayers();
    update();
  }

  // ------------------------------------------------------------------ answers and start
  function answers() {
    D.questions.forEach(function (q) {
      var box = document.querySelector('[data-lab-answer="' + q.id + '"]');
      if (box) { box.textContent = q.answer; }
    });
  }

  var mounts = { "lab-hmm": hmmView, "lab-cycles": cycleView, "lab-filings": filingView, "lab-clouds": cloudView };
  Object.keys(mounts).forEach(function (id) {
    var root = document.getElementById(id);
    if (root) { mounts[id](root); }
  });
  answers();
  // When the first view was drawn, in ms since navigation started (read by the browser test).
  window.labReadyMs = performance.now();
  document.documentElement.setAttribute("data-lab-ready", "");
})();
