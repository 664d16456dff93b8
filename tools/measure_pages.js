// The probe tools/measure_pages.py runs in each page once it is ready (its docstring says what
// each measure means). Called as (openFolds, maxList, minContrast, minFont); returns a JSON-able
// object.
(function (openFolds, maxList, minContrast, minFont) {
  var vw = window.innerWidth;
  function visible(e) {
    var r = e.getBoundingClientRect();
    if (r.width < 2 || r.height < 2) return false;  // and the 1-px boxes of screen-reader text
    var s = getComputedStyle(e);
    return s.visibility !== 'hidden' && s.display !== 'none' && parseFloat(s.opacity) > 0.05 &&
      !/rect\(0(px)?,? 0(px)?,? 0(px)?,? 0(px)?\)/.test(s.clip);
  }
  function label(e) {
    var name = e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
      (typeof e.className === 'string' && e.className.trim()
        ? '.' + e.className.trim().split(/\s+/).slice(0, 3).join('.') : '');
    var text = (e.textContent || '').replace(/\s+/g, ' ').trim().slice(0, 60);
    return name + (text ? ' "' + text + '"' : '');
  }
  function scrolls(e) {  // a box that keeps its content in (scrolls or clips sideways)
    var o = getComputedStyle(e).overflowX;
    return o === 'auto' || o === 'scroll' || o === 'hidden' || o === 'clip';
  }
  if (openFolds) document.querySelectorAll('details').forEach(function (d) { d.open = true; });
  // Wider than the screen: elements whose right edge passes the viewport, not inside a box
  // (other than the page itself) that scrolls or clips sideways; fixed-position layers
  // (drawers, dialogs) are left out.
  var wide = [], right = 0;
  var all = document.body.querySelectorAll('*');
  for (var i = 0; i < all.length; i++) {
    var e = all[i], r = e.getBoundingClientRect();
    if (r.right <= vw + 0.5 || r.width < 1) continue;
    var inside = false, fixed = false;
    for (var a = e.parentElement; a && a !== document.body; a = a.parentElement) {
      if (scrolls(a)) { inside = true; break; }
      if (getComputedStyle(a).position === 'fixed') { fixed = true; break; }
    }
    if (inside || fixed || getComputedStyle(e).position === 'fixed') continue;
    if (!visible(e)) continue;
    right = Math.max(right, r.right);
    wide.push([r.right, e]);
  }
  // Text that runs out of its box (a long word or address that cannot break) sticks out of
  // the page although its element does not: measured line by line.
  var walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT), node;
  while ((node = walker.nextNode())) {
    if (!node.textContent.trim() || !node.parentElement) continue;
    var range = document.createRange();
    range.selectNodeContents(node);
    var rects = range.getClientRects(), edge = 0;
    for (var j = 0; j < rects.length; j++) edge = Math.max(edge, rects[j].right);
    if (edge <= vw + 0.5) continue;
    var parent = node.parentElement, clipped = false;
    for (var b = parent; b && b !== document.body; b = b.parentElement) {
      if (scrolls(b) || getComputedStyle(b).position === 'fixed') { clipped = true; break; }
    }
    if (clipped || !visible(parent)) continue;
    right = Math.max(right, edge);
    wide.push([edge, parent]);
  }
  // Name the innermost offenders: those with no offending element inside them.
  var set = new Set(wide.map(function (w) { return w[1]; })), named = new Set();
  var leaves = wide.filter(function (w) {
    if (named.has(w[1])) return false;
    named.add(w[1]);
    for (var k = 0; k < w[1].children.length; k++)
      if (set.has(w[1].children[k])) return false;
    return true;
  }).sort(function (a, b) { return b[0] - a[0]; });
  var overflow = Math.max(0, Math.round(Math.max(right, document.documentElement.scrollWidth) - vw));
  // Code boxes.
  var code = 0, codeWide = [], codeLines = [];
  document.querySelectorAll('pre').forEach(function (p) {
    if (!visible(p)) return;
    code++;
    if (p.scrollWidth > p.clientWidth + 1) {
      codeWide.push(p);
      if (codeLines.length < maxList) {
        var lines = p.textContent.split('\n');
        codeLines.push(lines.reduce(function (a, b) { return a.length >= b.length ? a : b; }, '')
          .slice(0, 80));
      }
    }
  });
  // Tables cut off: wider than their box, and the box neither scrolls nor shows all.
  var cut = [];
  document.querySelectorAll('article table').forEach(function (t) {
    if (!visible(t)) return;
    for (var a = t.parentElement; a && a !== document.body; a = a.parentElement) {
      var o = getComputedStyle(a).overflowX;
      if (o === 'auto' || o === 'scroll') return;  // scrolls: the reader reaches every column
      if (o === 'hidden' || o === 'clip') {
        if (t.getBoundingClientRect().right > a.getBoundingClientRect().right + 1) cut.push(label(t));
        return;
      }
    }
  });
  // Output images: drawn width over natural width.
  var scale = null, scaleImg = null, scales = [];
  document.querySelectorAll('article img').forEach(function (im) {
    if (!visible(im) || !im.naturalWidth || im.naturalWidth < 200) return;
    var s = im.getBoundingClientRect().width / im.naturalWidth;
    scales.push(Math.round(s * 1000) / 1000);
    if (scale === null || s < scale) { scale = s; scaleImg = im.getAttribute('src'); }
  });
  // Figures (images, animations, canvases, videos) drawn wider than the column they stand
  // in (their output box, or the article): cut off, or scrolled sideways to be read. And the
  // type of each figure whose smallest type is recorded (data-font-px on the image or its
  // panel, in px at its natural width), as drawn: that size times its scale.
  var figuresWide = [], fonts = [], fontsUnknown = [];
  document.querySelectorAll('article img, article .animation, article canvas, article video')
    .forEach(function (e) {
      if (!visible(e)) return;
      var r = e.getBoundingClientRect();
      var box = e.closest('.cell_output') || e.closest('article');
      var bs = getComputedStyle(box), br = box.getBoundingClientRect();
      var left = br.left + parseFloat(bs.borderLeftWidth) + parseFloat(bs.paddingLeft);
      var right = br.right - parseFloat(bs.borderRightWidth) - parseFloat(bs.paddingRight);
      var name = e.getAttribute('src') || (e.querySelector('img') || e).id || label(e);
      if (name.indexOf('data:') === 0) name = label(e);
      name = name.split('/').pop().slice(0, 60);
      if (r.width > right - left + 1 || r.right > right + 1 || r.left < left - 1)
        figuresWide.push(name + ': ' + Math.round(r.width) + ' px in a ' +
                         Math.round(right - left) + '-px column');
      if (e.tagName !== 'IMG' || !e.naturalWidth) return;
      var holder = e.closest('[data-font-px]');
      var font = parseFloat(holder ? holder.getAttribute('data-font-px') : '');
      if (font > 0) fonts.push([font * r.width / e.naturalWidth, name]);
      else if (e.closest('.cell_output') && /\.png(\?|$)/i.test(e.getAttribute('src') || ''))
        fontsUnknown.push(name);
    });
  fonts.sort(function (a, b) { return a[0] - b[0]; });
  // Controls and their contrast.
  function rgba(s) {
    var m = s.match(/[\d.]+/g);
    if (!m) return [0, 0, 0, 0];
    m = m.map(Number);
    return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1];
  }
  function over(top, under) {  // top composited over an opaque under
    var a = top[3];
    return [0, 1, 2].map(function (i) { return top[i] * a + under[i] * (1 - a); }).concat([1]);
  }
  function background(e) {
    var stack = [];
    for (var a = e; a; a = a.parentElement) {
      var c = rgba(getComputedStyle(a).backgroundColor);
      if (c[3] > 0) stack.push(c);
      if (c[3] >= 1) break;
    }
    var base = [255, 255, 255, 1];
    if (!stack.length || stack[stack.length - 1][3] < 1) {
      // Nothing opaque behind: the canvas (the root's background, or white).
      var root = rgba(getComputedStyle(document.documentElement).backgroundColor);
      var body = rgba(getComputedStyle(document.body).backgroundColor);
      base = root[3] > 0 ? over(root, base) : body[3] > 0 ? over(body, base) : base;
    }
    for (var k = stack.length - 1; k >= 0; k--) base = over(stack[k], base);
    return base;
  }
  function lum(c) {
    return [0, 1, 2].map(function (i) {
      var v = c[i] / 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    }).reduce(function (s, v, i) { return s + v * [0.2126, 0.7152, 0.0722][i]; }, 0);
  }
  function contrast(p, q) {
    var a = lum(p), b = lum(q);
    return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  }
  var CONTROLS = 'button, select, input:not([type=hidden]), textarea, summary, [role=button], ' +
    'a.btn, .btn, .sd-card, .toggle-button, .Quiz .MCButton, .Quiz .Input-text, ' +
    '.Quiz button, .pg-button, ' +
    '.pg-select, .chapter-card, .cell_input summary';
  var controls = 0, low = [];
  document.querySelectorAll(CONTROLS).forEach(function (e) {
    if (!visible(e)) return;
    var r = e.getBoundingClientRect();
    if (r.right < 0 || r.left > vw) return;  // off screen (a closed drawer)
    controls++;
    var s = getComputedStyle(e);
    // Check boxes, radio buttons and sliders in the browser's own drawing: drawn visibly.
    if (e.tagName === 'INPUT' && /^(checkbox|radio|range|color|file)$/.test(e.type) &&
        s.appearance !== 'none') return;
    var bg = background(e), ratio;
    var hasText = (e.textContent || '').trim() || e.querySelector('svg, img, i');
    if (hasText) {
      ratio = contrast(over(rgba(s.color), bg), bg);
    } else {
      // No text or icon (a maze cell): seen by its fill or border against what is behind
      // it, or against a neighbour of the same kind (a wall beside a free cell).
      var behind = e.parentElement ? background(e.parentElement) : [255, 255, 255, 1];
      var border = over(rgba(s.borderTopColor), behind);
      ratio = Math.max(contrast(bg, behind),
                       parseFloat(s.borderTopWidth) > 0 ? contrast(border, behind) : 1);
      var sib = e.parentElement ? e.parentElement.children : [];
      for (var k = 0; k < sib.length && ratio < minContrast; k++)
        if (sib[k] !== e && sib[k].tagName === e.tagName) ratio = Math.max(ratio, contrast(bg, background(sib[k])));
    }
    // Text drawn in another colour inside the control (a card's title, a span): the worst
    // of the control's own colour and its text-bearing children's.
    e.querySelectorAll('*').forEach(function (c) {
      if (!visible(c) || !c.childNodes.length) return;
      var own = Array.prototype.some.call(c.childNodes, function (n) {
        return n.nodeType === 3 && n.textContent.trim();
      });
      if (!own) return;
      var cb = background(c);
      ratio = Math.min(ratio, contrast(over(rgba(getComputedStyle(c).color), cb), cb));
    });
    if (ratio < minContrast) low.push([ratio, e]);
  });
  low.sort(function (a, b) { return a[0] - b[0]; });
  return {
    width: vw,
    theme: document.documentElement.dataset.theme || '',
    height: document.documentElement.scrollHeight,
    overflow: overflow,
    wide: leaves.slice(0, maxList).map(function (w) {
      return Math.round(w[0] - vw) + ' px: ' + label(w[1]);
    }),
    code_blocks: code,
    code_wide: codeWide.length,
    code_wide_lines: codeLines,
    tables_cut: cut,
    figure_scale: scale === null ? null : Math.round(scale * 1000) / 1000,
    figure_scale_image: scaleImg,
    figure_scales: scales,
    figures_wide: figuresWide,
    font_px: fonts.length ? Math.round(fonts[0][0] * 10) / 10 : null,
    font_px_image: fonts.length ? fonts[0][1] : null,
    fonts_small: fonts.filter(function (f) { return f[0] < minFont - 0.05; }).slice(0, maxList)
      .map(function (f) { return [Math.round(f[0] * 10) / 10, f[1]]; }),
    fonts_unknown: fontsUnknown.slice(0, maxList),
    controls: controls,
    low_contrast_count: low.length,
    low_contrast: low.slice(0, maxList).map(function (w) { return [Math.round(w[0] * 100) / 100, label(w[1])]; })
  };
})
