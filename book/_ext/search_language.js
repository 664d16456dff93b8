/* The search page's query split into words as Sphinx split the Japanese pages into the words
 * of its index (book/_ext/search_language.py): Sphinx's own TinySegmenter
 * (sphinx.search.ja.DefaultSplitter), its tables in MODEL, its steps line for line, then the
 * index's filter (SearchJapanese.word_filter: a word of one character is not indexed).
 * Sphinx's default splitQuery splits at spaces and punctuation only, so 「価値反復」 was
 * looked up whole while the index holds 価値 and 反復. */
var splitQuery = (function (model) {
  "use strict";
  var has = Object.prototype.hasOwnProperty;
  var types = model.types.map(function (pair) {
    return [new RegExp("^" + pair[0], "u"), pair[1]];
  });
  var space = new Set(Array.from(model.space)); // Python's str.isspace()

  function ts(table, key) {
    return has.call(table, key) ? table[key] : 0;
  }

  function ctype(ch) {
    for (var i = 0; i < types.length; i++) {
      if (types[i][0].test(ch)) return types[i][1];
    }
    return "O";
  }

  function strip(word) { // Python's str.strip()
    var chars = Array.from(word);
    var start = 0;
    var end = chars.length;
    while (start < end && space.has(chars[start])) start++;
    while (end > start && space.has(chars[end - 1])) end--;
    return chars.slice(start, end).join("");
  }

  function segment(input) { // DefaultSplitter.split
    if (!input) return [];
    var chars = Array.from(input);
    var m = model.tables;
    var seg = ["B3", "B2", "B1"].concat(chars, ["E1", "E2", "E3"]);
    var ct = ["O", "O", "O"].concat(chars.map(ctype), ["O", "O", "O"]);
    var result = [];
    var word = seg[3];
    var p1 = "U";
    var p2 = "U";
    var p3 = "U";
    for (var i = 4; i < seg.length - 3; i++) {
      var score = m.BIAS__;
      var w1 = seg[i - 3], w2 = seg[i - 2], w3 = seg[i - 1];
      var w4 = seg[i], w5 = seg[i + 1], w6 = seg[i + 2];
      var c1 = ct[i - 3], c2 = ct[i - 2], c3 = ct[i - 1];
      var c4 = ct[i], c5 = ct[i + 1], c6 = ct[i + 2];
      score += ts(m.UP1__, p1);
      score += ts(m.UP2__, p2);
      score += ts(m.UP3__, p3);
      score += ts(m.BP1__, p1 + p2);
      score += ts(m.BP2__, p2 + p3);
      score += ts(m.UW1__, w1);
      score += ts(m.UW2__, w2);
      score += ts(m.UW3__, w3);
      score += ts(m.UW4__, w4);
      score += ts(m.UW5__, w5);
      score += ts(m.UW6__, w6);
      score += ts(m.BW1__, w2 + w3);
      score += ts(m.BW2__, w3 + w4);
      score += ts(m.BW3__, w4 + w5);
      score += ts(m.TW1__, w1 + w2 + w3);
      score += ts(m.TW2__, w2 + w3 + w4);
      score += ts(m.TW3__, w3 + w4 + w5);
      score += ts(m.TW4__, w4 + w5 + w6);
      score += ts(m.UC1__, c1);
      score += ts(m.UC2__, c2);
      score += ts(m.UC3__, c3);
      score += ts(m.UC4__, c4);
      score += ts(m.UC5__, c5);
      score += ts(m.UC6__, c6);
      score += ts(m.BC1__, c2 + c3);
      score += ts(m.BC2__, c3 + c4);
      score += ts(m.BC3__, c4 + c5);
      score += ts(m.TC1__, c1 + c2 + c3);
      score += ts(m.TC2__, c2 + c3 + c4);
      score += ts(m.TC3__, c3 + c4 + c5);
      score += ts(m.TC4__, c4 + c5 + c6);
      score += ts(m.UQ1__, p1 + c1);
      score += ts(m.UQ2__, p2 + c2);
      score += ts(m.UQ1__, p3 + c3); // sic: Sphinx's Python reads UQ1 here, and so must we
      score += ts(m.BQ1__, p2 + c2 + c3);
      score += ts(m.BQ2__, p2 + c3 + c4);
      score += ts(m.BQ3__, p3 + c2 + c3);
      score += ts(m.BQ4__, p3 + c3 + c4);
      score += ts(m.TQ1__, p2 + c1 + c2 + c3);
      score += ts(m.TQ2__, p2 + c2 + c3 + c4);
      score += ts(m.TQ3__, p3 + c1 + c2 + c3);
      score += ts(m.TQ4__, p3 + c2 + c3 + c4);
      var p = "O";
      if (score > 0) {
        result.push(strip(word));
        word = "";
        p = "B";
      }
      p1 = p2;
      p2 = p3;
      p3 = p;
      word += seg[i];
    }
    result.push(strip(word));
    return result;
  }

  function indexed(word) { // SearchJapanese.word_filter, on the word or its lower case
    return Array.from(word).length > 1 || Array.from(word.toLowerCase()).length > 1;
  }

  return function splitQuery(query) {
    return segment(query).filter(indexed);
  };
})(/*MODEL*/);
